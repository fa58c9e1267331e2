"""The data-vocabulary head: the softmax over the data's tokens plus one shared row equals the
full-vocabulary softmax of the model it leaves behind, before and after training through it."""
from __future__ import annotations

import json

import pytest
import torch
from modelkit import tiny_qwen

from fixrl.harness.demo.vocab_head import shared_tail_rows
from fixrl.train.logprobs import plain_log_probs, reply_log_probs


def batch(vocab_used: int = 60, seed: int = 3):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab_used, (2, 40), generator=g) * 3  # every third id: gaps in the vocabulary
    mask = torch.zeros(2, 40, dtype=torch.long)
    mask[:, 10:20] = 1
    mask[0, 30:40] = 1
    return ids, mask


def test_data_head_equals_full_softmax_before_and_after_training():
    model = tiny_qwen(vocab=512)
    ids, mask = batch()
    embedding = model.get_input_embeddings()
    with shared_tail_rows(model, ids.flatten().tolist()) as head:
        # the unseen rows were made one shared row: the full model and the data head agree
        ref = plain_log_probs(model, ids, mask)
        got = reply_log_probs(model, ids, mask, head=head)
        assert torch.allclose(got, ref, atol=1e-5)
        # the head trains its own rows (inputs read them too); the model's matrix is frozen
        assert not embedding.weight.requires_grad and head.weight.shape == (len(set(ids.flatten().tolist())) + 1, 64)
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad] + list(head.parameters()), lr=0.5)
        for _ in range(3):
            opt.zero_grad()
            (-reply_log_probs(model, ids, mask, head=head).sum()).backward()
            opt.step()
        trained = reply_log_probs(model, ids, mask, head=head).detach()
        assert not torch.allclose(trained, ref, atol=1e-3)  # it learned something
    # on exit every unseen row carries the trained shared row: the saved model is the trained one
    assert embedding.weight.requires_grad and "forward" not in vars(embedding)
    assert torch.allclose(plain_log_probs(model, ids, mask), trained, atol=1e-5)
    unseen = sorted(set(range(512)) - set(ids.flatten().tolist()))
    w = model.lm_head.weight
    assert torch.equal(w[unseen], w[unseen[0]].expand(len(unseen), -1))


def test_data_head_rejects_bad_ids():
    model = tiny_qwen(vocab=64)
    with pytest.raises(ValueError, match="token ids"), shared_tail_rows(model, [70]):
        pass
    with pytest.raises(ValueError, match="nothing to share"), shared_tail_rows(model, range(64)):
        pass


def test_data_head_needs_tied_embeddings():
    model = tiny_qwen(vocab=64)
    model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone())  # untied
    with pytest.raises(ValueError, match="tied input and output embeddings"), shared_tail_rows(model, [1, 2, 3]):
        pass


@pytest.mark.parametrize("keep_later_tokens", [False, True])
def test_data_vocab_head_keeps_the_rows_of_later_stages(tiny_model, tmp_path, keep_later_tokens):
    """A staged SFT's first run: tokens of the next stage's data, given to the head, keep their
    own rows; without it they leave the run sharing one row with every unseen token."""
    import torch
    from safetensors.torch import load_file

    from fixrl.harness.agent.trajectory import Trajectory
    from fixrl.harness.demo.vocab_head import data_vocab_head
    from fixrl.train.sft import SFTConfig, SFTHooks, run_sft

    now, later, unseen = [100, 101, 102, 103], 555, 777
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text(json.dumps(Trajectory(task_id="a", token_ids=now, assistant_mask=[0, 1, 1, 1]).to_dict()) + "\n")
    second.write_text(json.dumps(Trajectory(task_id="b", token_ids=[100, later], assistant_mask=[0, 1]).to_dict()) + "\n")
    out = tmp_path / "stage1"
    hooks = SFTHooks(output_head=data_vocab_head([str(second)] if keep_later_tokens else []))
    run_sft(SFTConfig(model=str(tiny_model), data=[str(first)], out=str(out), full_finetune=True), hooks=hooks)
    weights = load_file(str(out / "model.safetensors"))
    rows = weights.get("lm_head.weight", weights["model.embed_tokens.weight"])
    assert torch.equal(rows[unseen], rows[unseen + 1])  # the shared row
    assert torch.equal(rows[later], rows[unseen]) is not keep_later_tokens

"""Teacher-forced read use on a real tiny checkpoint: the demonstrated token scores a hit exactly
when it is the model's most likely next token, per family, and episodes without an edit are
counted apart; the first call's path counts as copied only when every one of its tokens is."""
from __future__ import annotations

import pytest

from fixrl.harness.agent.trajectory import Trajectory
from fixrl.harness.demo.read_use import edit_old_position, path_span, read_use


@pytest.fixture(scope="module")
def model_and_tok(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_model), AutoTokenizer.from_pretrained(tiny_model)


def _episode(tok, task_id: str, reply: str) -> tuple[Trajectory, int | None]:
    """A read observation, then `reply` as the policy's turn."""
    context = tok("<|im_start|>user\nline 3:  return a - b<|im_end|>\n<|im_start|>assistant\n",
                  add_special_tokens=False)["input_ids"]
    answer = tok(reply, add_special_tokens=False)["input_ids"]
    ids = context + answer
    traj = Trajectory(task_id=task_id, token_ids=ids, assistant_mask=[0] * len(context) + [1] * len(answer),
                      turn_spans=[(len(context), len(ids))])
    key = tok('old": "', add_special_tokens=False)["input_ids"]
    return traj, edit_old_position(ids, traj.turn_spans, key)


def test_edit_old_position_is_the_first_token_of_old(model_and_tok):
    _, tok = model_and_tok
    traj, pos = _episode(tok, "t", '{"name": "edit", "arguments": {"path": "m.py", "old": " - ", "new": " + "}}')
    assert pos is not None and tok.decode(traj.token_ids[pos:pos + 1]) == " -"
    _, none = _episode(tok, "t", '{"name": "submit", "arguments": {}}')
    assert none is None


def test_hits_follow_the_models_argmax(model_and_tok):
    import torch

    model, tok = model_and_tok
    traj, pos = _episode(tok, "a", '{"name": "edit", "arguments": {"path": "m.py", "old": " - ", "new": " + "}}')
    with torch.no_grad():
        top = int(model(input_ids=torch.tensor([traj.token_ids[:pos]])).logits[0, -1].argmax())
    right = Trajectory(task_id="a", token_ids=traj.token_ids[:pos] + [top] + traj.token_ids[pos + 1:],
                       assistant_mask=traj.assistant_mask, turn_spans=traj.turn_spans)
    other = (top + 1) % model.config.vocab_size
    wrong = Trajectory(task_id="b", token_ids=traj.token_ids[:pos] + [other] + traj.token_ids[pos + 1:],
                       assistant_mask=traj.assistant_mask, turn_spans=traj.turn_spans)
    no_edit, _ = _episode(tok, "c", '{"name": "submit", "arguments": {}}')

    model.train()
    result = read_use(model, tok, [right, wrong, no_edit], {"a": "wrong_arith", "b": "swap_minmax"})
    assert model.training  # measured in eval mode, left as it was found
    assert result.share == 0.5 and result.decisions == 2 and result.skipped == 1
    assert result.by_family == {"wrong_arith": 1.0, "swap_minmax": 0.0}
    assert "0.50" in result.to_text() and result.to_dict()["by_family"]["wrong_arith"] == 1.0
    empty = read_use(model, tok, [no_edit], {})
    assert empty.share is None and "no decisions" in empty.to_text()


def test_path_share_scores_the_first_calls_whole_path(model_and_tok):
    import torch

    model, tok = model_and_tok
    traj, _ = _episode(tok, "a", '{"name": "read", "arguments": {"path": "gym/lists.py"}}')
    span = path_span(traj.token_ids, traj.turn_spans, tok)
    assert span is not None and tok.decode(traj.token_ids[span[0]:span[1]]) == "gym/lists.py"

    class Copier(torch.nn.Module):
        """The real tiny model, its logits pushed to `traj`'s path tokens where they come: a policy
        that copies the path (the untrained model alone never does)."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, input_ids, use_cache=False):
            out = self.inner(input_ids=input_ids, use_cache=use_cache)
            for i in range(*span):
                if i - 1 < input_ids.shape[1]:
                    out.logits[0, i - 1, traj.token_ids[i]] += 1e4
            return out

    off = list(traj.token_ids)
    off[span[1] - 1] = tok("zq", add_special_tokens=False)["input_ids"][0]
    missed = Trajectory(task_id="b", token_ids=off, assistant_mask=traj.assistant_mask, turn_spans=traj.turn_spans)
    result = read_use(Copier(), tok, [traj, missed], {})
    assert result.path_share == 0.5 and result.paths == 2
    assert result.share is None and result.skipped == 2  # reads, no edits: no repair decisions
    assert result.to_dict()["path_share"] == 0.5 and "path copied 0.50" in result.to_text()
    assert read_use(model, tok, [traj], {}).path_share == 0.0  # the untrained model does not copy
    no_path, _ = _episode(tok, "c", '{"name": "test", "arguments": {}}')
    assert path_span(no_path.token_ids, no_path.turn_spans, tok) is None
    assert read_use(model, tok, [no_path], {}).path_share is None

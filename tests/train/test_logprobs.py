"""Reply log-probs against a plain full forward: values within 5e-7, gradients within 1e-5
(CPU, float32), for a base model and a peft LoRA model; masking; checkpointing leaves no trace."""
from __future__ import annotations

import pytest
import torch
from modelkit import tiny_qwen

from fixrl.train.logprobs import checkpointed_layers, head_log_probs, plain_log_probs, reply_log_probs, split_causal_lm


def trajectory_batch(vocab: int = 512, seed: int = 1):
    """Two right-padded rows with several assistant turns each: [2, T] ids and mask."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (2, 90), generator=g)
    mask = torch.zeros(2, 90, dtype=torch.long)
    for a, b in [(10, 18), (30, 41), (60, 75), (84, 90)]:
        mask[0, a:b] = 1
    for a, b in [(5, 9), (40, 52)]:
        mask[1, a:b] = 1
    ids[1, 60:] = 0  # padding after row 1's end
    return ids, mask


def training_loss(logp, mask):
    """A GRPO-shaped loss: advantages +-1 per row, token mean over the batch's reply tokens
    (so gradients have the scale training sees, not a sum's)."""
    adv = torch.tensor([[1.0], [-1.0]])
    return -(logp * adv * mask).sum() / mask.sum()


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_matches_plain_forward_values_and_grads(temperature):
    model = tiny_qwen()  # trainable tied head: the checkpointed-chunk path
    ids, mask = trajectory_batch()
    ref = plain_log_probs(model, ids, mask, temperature)
    training_loss(ref, mask).backward()
    ref_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    assert max(g.abs().max() for g in ref_grads.values()) > 1e-2  # a gradient worth comparing
    model.zero_grad()
    got = reply_log_probs(model, ids, mask, temperature, chunk_size=20)  # 3 chunks of 18-19
    training_loss(got, mask).backward()
    assert got.shape == ids.shape
    assert (got[mask == 0] == 0).all()
    assert (got[mask == 1] < 0).all()
    assert (got - ref).abs().max().item() <= 5e-7
    for n, p in model.named_parameters():
        assert torch.allclose(p.grad, ref_grads[n], atol=1e-5, rtol=0), n
    # the plain path sees the same values under no_grad as well
    with torch.no_grad():
        again = reply_log_probs(model, ids, mask, temperature, chunk_size=1000)
    assert (again - ref.detach()).abs().max().item() <= 5e-7


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_peft_lora_gradients_match(temperature):
    """LoRA: the head is frozen, so its gradient is taken in the forward pass (the fused path)."""
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(tiny_qwen(), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear",
                                                   init_lora_weights=False))
    ids, mask = trajectory_batch()
    ref = plain_log_probs(model, ids, mask, temperature)
    training_loss(ref, mask).backward()
    ref_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    assert max(g.abs().max() for g in ref_grads.values()) > 1e-2
    model.zero_grad()
    got = reply_log_probs(model, ids, mask, temperature, chunk_size=20)
    training_loss(got, mask).backward()
    assert (got - ref).abs().max().item() <= 5e-7
    assert ref_grads and all("lora_" in n for n in ref_grads)
    for n, p in model.named_parameters():
        if p.requires_grad:
            assert torch.allclose(p.grad, ref_grads[n], atol=1e-5, rtol=0), n


def test_gradient_only_from_assistant_tokens():
    """Changing a tool-result token's weight in the loss changes nothing; the log-prob at a
    non-assistant position carries no gradient at all."""
    model = tiny_qwen()
    ids, mask = trajectory_batch()
    logp = reply_log_probs(model, ids, mask)
    weights = torch.ones_like(logp)
    weights[0, 20:30] = 1000.0  # a tool-result span of row 0
    a = torch.autograd.grad((logp * weights).sum(), [p for p in model.parameters()], retain_graph=True)
    b = torch.autograd.grad(logp.sum(), [p for p in model.parameters()])
    for x, y in zip(a, b):
        assert torch.equal(x, y)


def test_entropy_and_errors():
    model = tiny_qwen()
    ids, mask = trajectory_batch()
    with torch.no_grad():
        logp, ent = reply_log_probs(model, ids, mask, return_entropy=True, chunk_size=5)
        logits = model(ids).logits[:, :-1].float()
        ref = -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1)
    m = mask[:, 1:].bool()
    assert torch.allclose(ent[:, 1:][m], ref[m], atol=1e-5)
    assert (ent[mask == 0] == 0).all()
    bad = mask.clone()
    bad[0, 0] = 1
    with pytest.raises(ValueError, match="first token"):
        reply_log_probs(model, ids, bad)
    with pytest.raises(ValueError, match=r"\[B, T\]"):
        reply_log_probs(model, ids[0], mask[0])
    with pytest.raises(TypeError, match="causal LM"):
        split_causal_lm(torch.nn.Linear(2, 2))


def test_checkpointing_is_scoped():
    model = tiny_qwen()
    decoder, head = split_causal_lm(model)
    with checkpointed_layers(decoder):
        assert all("forward" in vars(layer) for layer in decoder.layers)
    assert all("forward" not in vars(layer) for layer in decoder.layers)


@pytest.mark.parametrize("frozen", [True, False])
def test_head_chunks_equal_one_pass(frozen):
    """Chunked (fused when the head is frozen, checkpointed otherwise) against autograd through
    one full log-softmax: values, gradients of the hidden states and entropies."""
    torch.manual_seed(0)
    head = torch.nn.Linear(16, 300, bias=True).requires_grad_(not frozen)
    h = torch.randn(37, 16, requires_grad=True)
    y = torch.randint(0, 300, (37,))
    w = torch.randn(37)
    logp_all = torch.log_softmax(head(h) / 0.9, -1)
    ref = logp_all.gather(-1, y[:, None]).squeeze(-1)
    ref_ent = -(logp_all.exp() * logp_all).sum(-1)
    g_ref = torch.autograd.grad((ref * w).sum(), h)[0]
    many, ent = head_log_probs(head, h, y, 0.9, chunk_size=10, return_entropy=True)
    g = torch.autograd.grad((many * w).sum(), h)[0]
    assert torch.allclose(many, ref, atol=1e-6) and torch.allclose(g, g_ref, atol=1e-6)
    assert torch.allclose(ent, ref_ent, atol=1e-5) and not ent.requires_grad

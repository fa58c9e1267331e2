"""Reply log-probs: the memory trick that lets a 6-turn, 5,600-token rollout train on a T4.

One forward pass per trajectory over all its turns (not one per turn: that re-reads the prefix
once per turn). The decoder blocks run under activation checkpointing, so only each block's
input is kept for the backward pass. The output head and the log-softmax run only at positions
that predict an assistant token, a chunk of positions at a time, and each chunk is itself
checkpointed, or (a frozen head, the LoRA case) has its gradient taken in the forward pass:
the chunk's [chunk, vocab] logits live only while that chunk is computed, so logits never take
sequence x vocabulary memory and the peak does not grow with the number of chunks.

Numerics: the decoder and the head run under the precision setting's autocast (fp16 on CUDA by
default: a T4 has no bf16; `fixrl.harness.model.precision`); the head's logits are cast to float32
before the temperature and the log-softmax. In fp32 the result matches a plain full forward's
log-softmax within 5e-7, gradients within 1e-5 (tests/train/test_logprobs.py; chunks are made
equal-sized because BLAS takes another kernel for a matrix of a few rows, whose results differ
in the last bit).

What it does not do: sequence packing or padding-free batching; rows of a batch are
right-padded, which causal attention makes harmless for the real tokens.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Protocol, runtime_checkable

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from fixrl.harness.model.precision import autocast, model_precision

DEFAULT_CHUNK_SIZE = 256


@runtime_checkable
class OutputHead(Protocol):
    """A head to compute reply log-probs through instead of the model's own (SFT's hook): a
    module from hidden states [n, H] to logits [n, C] whose columns need not be token ids."""

    def __call__(self, hidden: Tensor) -> Tensor: ...

    def columns(self, targets: Tensor) -> Tensor:
        """Token ids [n] -> the logit column of each [n]."""
        ...


def split_causal_lm(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """(decoder that returns hidden states, output head) of an HF causal LM, a peft model
    wrapping one, or anything with `.model` and `.lm_head`."""
    m = model
    if hasattr(m, "get_base_model"):  # peft.PeftModel -> the (LoRA-injected) transformers model
        m = m.get_base_model()
    decoder, head = getattr(m, "model", None), getattr(m, "lm_head", None)
    if decoder is None or head is None:
        raise TypeError(f"{type(model).__name__} is not a causal LM with .model and .lm_head "
                        "(a transformers *ForCausalLM, optionally wrapped by peft)")
    return decoder, head


@contextlib.contextmanager
def checkpointed_layers(decoder: nn.Module, enabled: bool = True) -> Iterator[None]:
    """Run each decoder block under non-reentrant activation checkpointing for the duration.

    Wraps the instances' forward (not the class), so it works in eval mode too (transformers'
    own switch only acts in training mode) and leaves the model as it was afterwards.
    Skipped for layers whose transformers checkpointing is already on.
    """
    layers = getattr(decoder, "layers", None)
    if not enabled or layers is None:
        yield
        return
    wrapped = []
    try:
        for layer in layers:
            if getattr(layer, "gradient_checkpointing", False) and layer.training:
                continue
            original = layer.forward

            def forward(*args, _original=original, **kwargs):
                return checkpoint(_original, *args, use_reentrant=False, **kwargs)

            layer.forward = forward  # instance attribute shadows the class's forward
            wrapped.append(layer)
        yield
    finally:
        for layer in wrapped:
            del layer.forward


def _head_chunk(head: nn.Module, hidden: Tensor, targets: Tensor, temperature: float,
                with_entropy: bool) -> tuple[Tensor, Tensor]:
    """hidden [n, H], targets [n] -> (log p(target) [n], entropy [n] or empty)."""
    logits = head(hidden).float()  # [n, V]
    if temperature != 1.0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)  # [n, V]
    logp = logp_all.gather(-1, targets[:, None]).squeeze(-1)  # [n]
    if with_entropy:
        with torch.no_grad():
            entropy = -(logp_all.exp() * logp_all).sum(-1)  # [n]
    else:
        entropy = logp.new_empty(0)
    return logp, entropy


class _FrozenHeadLogProbs(torch.autograd.Function):
    """log p(target) through a frozen linear head, with its gradient taken in the forward pass.

    log p_i depends on hidden_i alone, and d log p_i / d hidden_i = (onehot(y_i) - p_i) W / T,
    an [H] vector per position. Computing it while the chunk's [n, V] probabilities exist saves
    [n, H] instead of [n, V] for the backward pass, and the backward is one multiply: no
    recomputation of the head (2 vocabulary-sized matmuls per chunk instead of 3). Only valid
    when the head's weights get no gradient (LoRA training; peft's "all-linear" leaves the
    output head alone); otherwise the checkpointed chunk is used.
    """

    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, bias: Tensor | None, targets: Tensor,
                temperature: float, with_entropy: bool):
        logits = torch.nn.functional.linear(hidden, weight, bias).float()  # [n, V]
        if temperature != 1.0:
            logits.div_(temperature)
        logp_all = torch.log_softmax(logits, dim=-1)  # [n, V]
        del logits
        logp = logp_all.gather(-1, targets[:, None]).squeeze(-1)  # [n]
        probs = logp_all.exp()  # [n, V]
        entropy = -(probs * logp_all).sum(-1) if with_entropy else logp.new_empty(0)  # [n]
        del logp_all
        coef = probs.neg_()  # [n, V]: onehot(y) - p, built in place
        coef.scatter_add_(1, targets[:, None], torch.ones_like(logp)[:, None])
        jac = (coef.to(weight.dtype) @ weight).float() / temperature  # [n, H]
        ctx.save_for_backward(jac)
        ctx.hidden_dtype = hidden.dtype
        ctx.mark_non_differentiable(entropy)
        return logp, entropy

    @staticmethod
    def backward(ctx, grad_logp: Tensor, grad_entropy: Tensor):
        (jac,) = ctx.saved_tensors
        grad_hidden = (grad_logp.float()[:, None] * jac).to(ctx.hidden_dtype)  # [n, H]
        return grad_hidden, None, None, None, None, None


def _frozen_linear(head: nn.Module) -> bool:
    return type(head) is nn.Linear and not any(p.requires_grad for p in head.parameters())


def head_log_probs(head: nn.Module, hidden: Tensor, targets: Tensor, temperature: float = 1.0,
                   chunk_size: int = DEFAULT_CHUNK_SIZE, return_entropy: bool = False,
                   checkpoint_chunks: bool | None = None) -> tuple[Tensor, Tensor | None]:
    """Log-probs of `targets` under softmax(head(hidden) / temperature), chunk by chunk.

    hidden [N, H] (the final-normed hidden states at positions that predict a reply token),
    targets [N] -> (logp [N], entropy [N] or None). With grad enabled, a frozen linear head
    takes each chunk's gradient in the forward pass (_FrozenHeadLogProbs); any other head has
    each chunk checkpointed (its logits are recomputed in the backward pass rather than kept).
    """
    if checkpoint_chunks is None:
        checkpoint_chunks = torch.is_grad_enabled()
    if hidden.shape[0] == 0:
        empty = hidden.new_zeros(0, dtype=torch.float32)
        return empty, (empty if return_entropy else None)
    logps, entropies = [], []
    # equal-sized chunks (no small tail chunk: BLAS takes another kernel for a few rows)
    n_chunks = -(-hidden.shape[0] // chunk_size)
    fused = torch.is_grad_enabled() and hidden.requires_grad and _frozen_linear(head)
    for h, y in zip(hidden.tensor_split(n_chunks), targets.tensor_split(n_chunks)):  # [n, H], [n]
        if fused:
            lp, ent = _FrozenHeadLogProbs.apply(h, head.weight, head.bias, y, temperature, return_entropy)
        elif checkpoint_chunks:
            lp, ent = checkpoint(_head_chunk, head, h, y, temperature, return_entropy, use_reentrant=False)
        else:
            lp, ent = _head_chunk(head, h, y, temperature, return_entropy)
        logps.append(lp)
        entropies.append(ent)
    logp = torch.cat(logps)  # [N]
    return logp, (torch.cat(entropies).detach() if return_entropy else None)


def reply_log_probs(model: nn.Module, token_ids: Tensor, assistant_mask: Tensor, temperature: float = 1.0,
                    chunk_size: int = DEFAULT_CHUNK_SIZE, return_entropy: bool = False,
                    gradient_checkpointing: bool = True, precision: str | None = None,
                    head: OutputHead | None = None):
    """Log-probs of the policy's own tokens under `model`, one forward pass per row.

    token_ids [B, T] (right-padded), assistant_mask [B, T] (1 exactly where the policy sampled;
    0 on prompts, tool results and padding) -> logp [B, T]: log p(token_t | tokens_<t) at
    assistant positions, 0 elsewhere. With return_entropy: (logp, entropy [B, T]) where entropy
    is the policy's entropy (no grad) at the same positions.

    Differentiable with respect to the model's trainable weights. Decoder blocks are
    checkpointed when grad is enabled (gradient_checkpointing=True). precision: the setting's
    autocast (fp32 | fp16 | bf16); None: the precision the model's frozen weights were loaded in.
    head: an `OutputHead` in place of the model's own (its `columns` maps the target token ids
    to its logit columns).
    """
    if token_ids.dim() != 2 or token_ids.shape != assistant_mask.shape:
        raise ValueError(f"token_ids {tuple(token_ids.shape)} and assistant_mask "
                         f"{tuple(assistant_mask.shape)} must both be [B, T]")
    mask = assistant_mask.bool()
    if mask[:, 0].any():
        raise ValueError("assistant_mask[:, 0] is 1: the first token has no context to predict it from")
    decoder, model_head = split_causal_lm(model)
    device = next(model.parameters()).device
    token_ids, mask = token_ids.to(device), mask.to(device)
    if precision is None:
        precision = model_precision(model)
    B, T = token_ids.shape
    out = torch.zeros(B, T, dtype=torch.float32, device=device)  # [B, T]
    ent_out = torch.zeros(B, T, dtype=torch.float32, device=device) if return_entropy else None
    if not mask.any():
        return (out, ent_out) if return_entropy else out
    # the last position predicts nothing; the forward stops before it
    last = int(mask.nonzero()[:, 1].max())  # furthest assistant position, [] -> int
    inputs = token_ids[:, :last]  # [B, last]
    rows, cols = mask.nonzero(as_tuple=True)  # [N], [N]: assistant positions
    checkpointed = gradient_checkpointing and torch.is_grad_enabled()
    with autocast(precision, device.type), checkpointed_layers(decoder, checkpointed):
        hidden = decoder(input_ids=inputs, use_cache=False).last_hidden_state  # [B, last, H]
        selected = hidden[rows, cols - 1]  # [N, H]: the positions that predict reply tokens
        targets = token_ids[rows, cols]  # [N]
        if head is not None:
            logp, entropy = head_log_probs(head, selected, head.columns(targets), temperature, chunk_size,
                                           return_entropy)  # [N], [N]
        else:
            logp, entropy = head_log_probs(model_head, selected, targets, temperature, chunk_size,
                                           return_entropy)  # [N], [N]
    out = out.index_put((rows, cols), logp)  # [B, T], differentiable in logp
    if return_entropy:
        ent_out[rows, cols] = entropy
        return out, ent_out
    return out


def plain_log_probs(model: nn.Module, token_ids: Tensor, assistant_mask: Tensor,
                    temperature: float = 1.0) -> Tensor:
    """The reference implementation: a full forward, logits over every position, float32
    log-softmax over [B, T, V]. For tests and the benchmark's baseline only (T x V memory)."""
    logits = model(input_ids=token_ids, use_cache=False).logits.float() / temperature  # [B, T, V]
    logp_all = torch.log_softmax(logits[:, :-1], dim=-1)  # [B, T-1, V]
    logp = logp_all.gather(-1, token_ids[:, 1:, None]).squeeze(-1)  # [B, T-1]
    out = torch.zeros(token_ids.shape, dtype=torch.float32, device=logp.device)
    out[:, 1:] = logp
    return out * assistant_mask.to(out.dtype)

"""An output head over the data's own tokens, for full fine-tuning of a model trained from scratch.

A tiny policy trained from random weights (the demo's) sees a few hundred distinct token ids,
yet Qwen2.5's head has 151,936 rows: the head and its softmax are nearly all of an SFT step's
cost. `DataVocabHead` makes the rows of every token that never occurs in the data one shared
row (their mean at the start), so a softmax over the data's tokens plus that shared row, whose
logit counts once per token it stands for (+ log n), is *exactly* the full-vocabulary softmax of
the model. `shared_tail_rows` keeps the saved checkpoint that model: a plain Qwen2 checkpoint
whose unseen tokens all carry the shared row. The head trains a copy of just those K + 1 rows,
the input embedding reading them too, so neither the backward pass nor the optimizer touches the
full [151936, H] matrix: on the demo's excerpts that made a step several times faster than
training the matrix through the same softmax, with the same weights to ~1e-6.

What it does not do: anything for LoRA (the frozen head's rows differ) or for a model that
already knows its vocabulary (a real Qwen2.5 checkpoint: tying its unseen rows would erase it).
Unseen tokens keep one shared input embedding too (tied weights), which a model that never read
them has not learned anything about anyway.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator
from typing import Any

import torch
from torch import Tensor, nn

from fixrl.train.logprobs import split_causal_lm
from fixrl.train.sft import Example, load_examples


class DataVocabHead(nn.Module):
    """hidden [n, H] -> logits [n, K + 1]: K data tokens, then the shared row (+ log n_shared).
    A `train.logprobs.OutputHead`."""

    def __init__(self, weight: Tensor, keep: Tensor, shared: int, n_shared: int) -> None:
        super().__init__()
        # The head's own rows [K+1, H], a copy of the model's (tied) rows of the data's tokens and
        # the shared row: the optimizer then updates K+1 rows, not all 151,936 of the model's
        # (AdamW over the full matrix was about 0.07 s of a 0.2 s step of 4 short excerpts here).
        self.weight = nn.Parameter(weight[torch.cat([keep, keep.new_tensor([shared])])].detach().clone())
        self.log_n_shared = math.log(n_shared) if n_shared else -math.inf
        lookup = torch.full((weight.shape[0],), len(keep), dtype=torch.long)  # [V]: unseen -> shared
        lookup[keep] = torch.arange(len(keep))
        self.register_buffer("lookup", lookup, persistent=False)

    def columns(self, targets: Tensor) -> Tensor:
        """Token ids [n] -> column of this head's logits (and row of its weight) [n]."""
        return self.lookup.to(targets.device)[targets]

    def embed(self, input_ids: Tensor) -> Tensor:
        """The input embeddings [..., H] of token ids [...] (tied: the head's rows)."""
        return nn.functional.embedding(self.columns(input_ids), self.weight)

    def forward(self, hidden: Tensor) -> Tensor:
        logits = hidden @ self.weight.T  # [n, K+1]
        offset = torch.zeros(logits.shape[-1], dtype=logits.dtype, device=logits.device)
        offset[-1] = self.log_n_shared
        return logits + offset


@contextlib.contextmanager
def shared_tail_rows(model: nn.Module, token_ids: Iterable[int]) -> Iterator[DataVocabHead]:
    """Make every token outside `token_ids` share one head row, and yield the head to train with.

    Inside the context the model's (tied) embedding matrix is frozen and its input embedding
    reads the head's rows instead, so train `head.parameters()` beside the model's other
    trainable parameters. On exit (also on error) the head's rows are written back: the data's
    tokens' rows, and the shared row, as trained, into every unseen token's row, so the model left
    behind computes what the head computed. Exactly the training of the full matrix through the
    shared row: an unseen token's row gets no gradient there, and is overwritten on exit.
    """
    _, head = split_causal_lm(model)
    weight = head.weight  # [V, H]
    vocab = weight.shape[0]
    keep = torch.tensor(sorted({int(t) for t in token_ids}), dtype=torch.long)
    if len(keep) == 0 or int(keep[-1]) >= vocab or int(keep[0]) < 0:
        raise ValueError(f"token ids must lie in [0, {vocab}) and not be empty")
    unseen = torch.ones(vocab, dtype=torch.bool)
    unseen[keep] = False
    n_shared = int(unseen.sum())
    if n_shared == 0:
        raise ValueError("every token of the vocabulary is in the data: nothing to share")
    embedding = model.get_input_embeddings()
    if embedding.weight is not weight:
        raise ValueError("shared_tail_rows needs tied input and output embeddings")
    shared = int(unseen.nonzero()[0])  # the one row that is trained for all of them
    keep, unseen = keep.to(weight.device), unseen.to(weight.device)
    with torch.no_grad():
        weight[unseen] = weight[unseen].mean(0)
    data_head = DataVocabHead(weight, keep, shared, n_shared).to(weight.device)
    requires_grad = weight.requires_grad
    weight.requires_grad_(False)
    embedding.forward = data_head.embed  # an instance attribute: `del` restores the class's
    try:
        yield data_head
    finally:
        del embedding.forward
        weight.requires_grad_(requires_grad)
        with torch.no_grad():
            rows = data_head.weight.detach().to(weight.dtype)
            weight[keep] = rows[:-1]
            weight[unseen] = rows[-1]


def data_vocab_head(extra_data: Iterable[str] = ()):
    """An `SFTHooks.output_head`: `shared_tail_rows` over the tokens of the run's examples and of
    `extra_data` (files a later stage trains on, so that their tokens keep rows of their own)."""
    extra = list(extra_data)

    def hook(model: nn.Module, tokenizer: Any, examples: list[Example]) -> contextlib.AbstractContextManager:
        vocab = {t for e in examples for t in e.token_ids}
        if extra:
            vocab |= {t for e in load_examples(extra, tokenizer)[0] for t in e.token_ids}
        return shared_tail_rows(model, vocab)

    return hook

"""The demo's per-token SFT loss weights (`train.sft.SFTHooks.token_weights`): tool-call argument
values count more than the rest of a reply.

These few tokens (a path, an edit's `old`/`new` text) carry what the reply took from its
context; a tiny model trained from scratch learns to copy the path, and to pick the edit a read
showed, sooner when they weigh more.
"""
from __future__ import annotations

import re
from typing import Any

from fixrl.train.sft import Example

_VALUE_START = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)": "$')


def argument_value_weights(tokenizer: Any, ids: list[int], mask: list[int], weight: float) -> list[float]:
    """Loss weights [T]: `weight` on reply tokens inside a JSON string value whose key is not
    `name` (a tool call's arguments, up to and including the token that closes the string), 1 on
    other reply tokens, 0 elsewhere. Reads the decoded text token by token, so it needs no parse
    of a call and gives up on nothing: a malformed call just gets fewer weighted tokens."""
    weights = [float(m) for m in mask]
    text, inside = "", False
    for i, (t, m) in enumerate(zip(ids, mask)):
        if not m:
            text, inside = "", False
            continue
        piece = tokenizer.decode([t])
        if not inside:
            start = _VALUE_START.search(text)
            inside = start is not None and start.group(1) != "name"
        if inside:
            weights[i] = weight
            if '"' in piece.replace('\\"', ""):  # the value's closing quote (escaped ones do not close)
                inside = False
        text = (text + piece)[-64:]
    return weights


def value_weights(weight: float):
    """An `SFTHooks.token_weights` function: `argument_value_weights` at `weight`."""
    def weights(example: Example, tokenizer: Any) -> list[float]:
        return argument_value_weights(tokenizer, example.token_ids, example.assistant_mask, weight)

    return weights

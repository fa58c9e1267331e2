"""The demo's SFT loss weights: tool-call argument values stressed, nothing else."""
from __future__ import annotations

from fixrl.harness.demo.weights import argument_value_weights, value_weights
from fixrl.harness.model.tiny import qwen25_tokenizer
from fixrl.train.sft import Example, render_chat

TOOLS = [{"type": "function", "function": {"name": "read", "description": "Read a file",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                          "required": ["path"]}}}]
CHAT = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix add()."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a.py\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "def add(a, b):\n    return a - b"},
        {"role": "assistant", "content": "The bug is the minus sign."}]


def test_argument_value_weights_stress_argument_values_only():
    tok = qwen25_tokenizer()
    ids, mask = render_chat(tok, CHAT, TOOLS, "x")
    weights = argument_value_weights(tok, ids, mask, 4.0)
    assert [w for w, m in zip(weights, mask) if not m] == [0.0] * (len(mask) - sum(mask))
    stressed = "".join(tok.decode([i]) for i, w in zip(ids, weights) if w == 4.0)
    assert stressed.startswith("a.py") and "read" not in stressed  # the path, not the tool's name
    assert argument_value_weights(tok, ids, mask, 1.0) == [float(m) for m in mask]
    # the SFT hook gives the same weights for an example
    assert value_weights(4.0)(Example(ids, mask, "x"), tok) == weights

"""The chat format: prompts from the model's own chat template, tool calls parsed from its text.

Qwen2.5 writes tool calls in the Hermes format inside its assistant turn:

    <tool_call>
    {"name": "read", "arguments": {"path": "src/calc.py"}}
    </tool_call>

fixrl allows exactly one call per turn (the environment answers one observation per turn).
Anything else the model writes is bad input, never an exception: `parse_tool_calls` returns a
`Malformed` whose message says what was wrong and shows the expected form, and the environment
hands that message back to the model as its observation.
"""
from __future__ import annotations

import json
import re
from typing import Any

from fixrl.envs.types import Malformed, ToolCall

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
END_OF_TURN = "<|im_end|>"

EXPECTED_FORM = (
    "Make exactly one tool call per turn, written as:\n"
    f'{TOOL_CALL_OPEN}\n{{"name": <tool-name>, "arguments": {{<argument-name>: <value>, ...}}}}\n{TOOL_CALL_CLOSE}\n'
    "and then end your turn."
)


def _malformed(what: str) -> Malformed:
    return Malformed(error=f"Malformed tool call: {what}\n{EXPECTED_FORM}")


def parse_tool_calls(text: str, truncated: bool = False) -> ToolCall | Malformed:
    """Parse one assistant turn (its text without the end-of-turn token).

    `truncated`: the reply hit the per-turn token limit before ending its turn; it is Malformed
    even when it holds a complete call (the model must learn to end its turn).
    Text before or after the one call (a sentence of reasoning) is allowed. `arguments` may
    also be a JSON string holding an object, as OpenAI-style models sometimes write it. Whether
    the tool exists and its arguments are valid is the environment's business, not the parser's.
    """
    if truncated:
        return _malformed("the reply was cut off at the per-turn token limit before it ended "
                          f"(the turn must end with {END_OF_TURN} soon after the call).")
    if not text.strip():
        return _malformed("the reply was empty.")
    opens = text.count(TOOL_CALL_OPEN)
    closes = text.count(TOOL_CALL_CLOSE)
    if opens == 0:
        if closes:
            return _malformed(f"found {TOOL_CALL_CLOSE} without an opening {TOOL_CALL_OPEN}.")
        return _malformed(f"no {TOOL_CALL_OPEN} block found in the reply.")
    if opens > 1:
        return _malformed(f"found {opens} {TOOL_CALL_OPEN} blocks; only one call per turn is allowed.")
    start = text.index(TOOL_CALL_OPEN) + len(TOOL_CALL_OPEN)
    end = text.find(TOOL_CALL_CLOSE, start)
    if end < 0:
        return _malformed(f"the {TOOL_CALL_OPEN} block has no closing {TOOL_CALL_CLOSE} tag.")
    if closes > 1:
        return _malformed(f"found {closes} {TOOL_CALL_CLOSE} tags for one {TOOL_CALL_OPEN}.")
    body = text[start:end].strip()
    if not body:
        return _malformed(f"the {TOOL_CALL_OPEN} block is empty.")
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as e:
        return _malformed(f"the call is not valid JSON ({e.msg} at line {e.lineno} column {e.colno}).")
    if not isinstance(obj, dict):
        return _malformed(f"the call must be a JSON object with \"name\" and \"arguments\", got a JSON "
                          f"{type(obj).__name__}.")
    unknown = sorted(set(obj) - {"name", "arguments"})
    if unknown:
        return _malformed(f"unexpected key(s) {', '.join(map(json.dumps, unknown))}; the object has exactly "
                          "\"name\" and \"arguments\".")
    if "name" not in obj:
        return _malformed("the call has no \"name\".")
    if not isinstance(obj["name"], str) or not obj["name"].strip():
        return _malformed("\"name\" must be a non-empty string.")
    if "arguments" not in obj:
        return _malformed(f"the call to {obj['name']!r} has no \"arguments\" (use {{}} for none).")
    args: Any = obj["arguments"]
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            pass
    if not isinstance(args, dict):
        return _malformed(f"\"arguments\" must be a JSON object, got {type(obj['arguments']).__name__}.")
    return ToolCall(name=obj["name"], arguments=args)


def format_tool_call(call: ToolCall) -> str:
    """The exact text a model writes for `call`: the same bytes Qwen2.5's chat template renders
    for an assistant message carrying `tool_calls` (`tojson` = json.dumps, ensure_ascii off)."""
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return f"{TOOL_CALL_OPEN}\n{body}\n{TOOL_CALL_CLOSE}"


_NAMED = re.compile(r'"name"\s*:\s*"[^"]+"')


def tool_choice_span(traj: Any, tokenizer: Any, turn: int = 0) -> tuple[int, int]:
    """[start, end) of an assistant turn's tokens up to and including its tool's name (`<tool_call>
    {"name": "read",`): the choice of tool, without the arguments. The whole turn when it names
    no tool."""
    start, end = traj.turn_spans[turn]
    for j in range(start + 1, end + 1):
        if _NAMED.search(tokenizer.decode(traj.token_ids[start:j])):
            return start, j
    return start, end


def render(tokenizer, messages: list[dict], tools: list[dict] | None = None,
           add_generation_prompt: bool = True) -> str:
    """The conversation as text in the model's own chat template."""
    text = tokenizer.apply_chat_template(messages, tools=tools or None,
                                         add_generation_prompt=add_generation_prompt, tokenize=False)
    if not isinstance(text, str):  # some tokenizers return a list for batched input
        raise TypeError(f"apply_chat_template returned {type(text).__name__}, expected str")
    return text


def encode(tokenizer, text: str) -> list[int]:
    """Token ids of rendered text. The template already wrote every special token, so none are
    added."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def end_of_turn_id(tokenizer) -> int:
    """The id of the token that ends an assistant turn (`<|im_end|>` for Qwen)."""
    tid = tokenizer.convert_tokens_to_ids(END_OF_TURN)
    if tid is None or tid == tokenizer.unk_token_id:
        raise ValueError(f"the tokenizer has no {END_OF_TURN} token: fixrl needs a ChatML (Qwen) chat format")
    return int(tid)

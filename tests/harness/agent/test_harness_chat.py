"""Parsing the model's tool calls: one call per turn, everything else a clear Malformed."""
from __future__ import annotations

import pytest

from fixrl.envs.types import Malformed, ToolCall
from fixrl.harness.agent.chat import EXPECTED_FORM, format_tool_call, parse_tool_calls


def test_parses_a_hermes_call():
    text = '<tool_call>\n{"name": "read", "arguments": {"path": "calc.py", "start": 3}}\n</tool_call>'
    assert parse_tool_calls(text) == ToolCall("read", {"path": "calc.py", "start": 3})


def test_text_around_the_call_is_allowed():
    text = 'I will read the file first.\n<tool_call>\n{"name": "test", "arguments": {}}\n</tool_call>\n'
    assert parse_tool_calls(text) == ToolCall("test", {})


def test_arguments_as_json_string_are_accepted():
    text = '<tool_call>{"name": "read", "arguments": "{\\"path\\": \\"a.py\\"}"}</tool_call>'
    assert parse_tool_calls(text) == ToolCall("read", {"path": "a.py"})


@pytest.mark.parametrize("text,truncated,why", [
    ('<tool_call>\n{"name": "read", "arguments": {"path": "a.py"}\n</tool_call>', False, "not valid JSON"),
    ('<tool_call>\n{"name": "read", "arguments": {}}\n</tool_call>\n'
     '<tool_call>\n{"name": "test", "arguments": {}}\n</tool_call>', False, "only one call per turn"),
    ('<tool_call>\n{"name": "read", "arguments": {"path": "a.py"}}\n', False, "no closing </tool_call>"),
    ("", False, "empty"),
    ("   \n ", False, "empty"),
    ('<tool_call>\n{"name": "read", "arguments": {"path": "a.py"}}\n</tool_call>', True, "cut off"),
    ('<tool_call>\n{"arguments": {"path": "a.py"}}\n</tool_call>', False, 'no "name"'),
    ('<tool_call>\n{"name": "read"}\n</tool_call>', False, 'no "arguments"'),
    ('<tool_call>\n{"name": "read", "arguments": [1]}\n</tool_call>', False, "must be a JSON object"),
    ('<tool_call>\n{"name": "", "arguments": {}}\n</tool_call>', False, "non-empty string"),
    ('<tool_call>\n{"name": "read", "arguments": {}, "id": 3}\n</tool_call>', False, "unexpected key"),
    ('<tool_call>\n["read", {}]\n</tool_call>', False, "JSON object"),
    ('<tool_call>\n</tool_call>', False, "is empty"),
    ('{"name": "read", "arguments": {}}', False, "no <tool_call> block"),
    ('{"name": "read", "arguments": {}}</tool_call>', False, "without an opening"),
    ("I think the bug is in calc.py", False, "no <tool_call> block"),
])
def test_malformed_replies_say_what_was_wrong(text, truncated, why):
    out = parse_tool_calls(text, truncated=truncated)
    assert isinstance(out, Malformed)
    assert why in out.error
    assert EXPECTED_FORM in out.error  # and what the expected form is


@pytest.mark.parametrize("call", [
    ToolCall("read", {"path": "src/x.py"}),
    ToolCall("edit", {"path": "a.py", "old": "if x < hi:\n", "new": "if x > hi:\n"}),
    ToolCall("submit", {"answer": "naïve — 42 \"quoted\" <tag>"}),
    ToolCall("test", {}),
])
def test_format_then_parse_round_trips(call):
    text = format_tool_call(call)
    assert text.startswith("<tool_call>\n{") and text.endswith("}\n</tool_call>")
    assert parse_tool_calls(text) == call

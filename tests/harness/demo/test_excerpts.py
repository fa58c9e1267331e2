"""Excerpts of informed episodes: the read cut to its header, the edit's line and a few drawn
lines in file order, then the edit reply with its own ids, the reply alone in the loss."""
from __future__ import annotations

import random

import pytest

from fixrl.harness.agent.chat import encode, render
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.harness.demo.excerpts import excerpt, excerpts, path_excerpt, path_excerpts
from fixrl.harness.model.tiny import qwen25_tokenizer

SOURCE = "\n".join(["m.py (12 lines)"] + [f"{i:4d}  x{i} = f({i})" for i in range(1, 12)]
                   + ["  12      return a - b"])
READ = '<tool_call>\n{"name": "read", "arguments": {"path": "m.py"}}\n</tool_call>'
EDIT = '<tool_call>\n{"name": "edit", "arguments": {"path": "m.py", "old": " - ", "new": " + "}}\n</tool_call>'
TEST = '<tool_call>\n{"name": "test", "arguments": {}}\n</tool_call>'


@pytest.fixture(scope="module")
def tok():
    return qwen25_tokenizer()


def episode(tok, replies: list[str], observations: list[str], issue: str = "Fix m.py") -> Trajectory:
    """Token ids, mask and turn spans as the agent loop records them, from chat messages."""
    messages = [{"role": "system", "content": "Fix the bug."}, {"role": "user", "content": issue}]
    spans = []
    for reply, observation in zip(replies, observations):
        start = len(encode(tok, render(tok, messages, add_generation_prompt=True)))
        messages.append({"role": "assistant", "content": reply})
        spans.append((start, start + len(encode(tok, reply + "<|im_end|>"))))
        messages.append({"role": "tool", "content": observation})
    ids = encode(tok, render(tok, messages, add_generation_prompt=False))
    mask = [0] * len(ids)
    for a, b in spans:
        mask[a:b] = [1] * (b - a)
    return Trajectory(task_id="t", token_ids=ids, assistant_mask=mask, turn_spans=spans, messages=messages,
                      reward=1.0, info={"outcome": "pass"})


def test_excerpt_cuts_the_read_and_keeps_the_reply(tok):
    traj = episode(tok, [READ, EDIT], [SOURCE, "Edited m.py"])
    cut = excerpt(traj, tok, 3, random.Random(0))
    text = tok.decode(cut.token_ids)
    shown = text.split("<tool_response>\n")[1].split("\n</tool_response>")[0].split("\n")
    assert shown[0] == "m.py (12 lines)" and shown[-1] == "  12      return a - b" and len(shown) == 5
    assert shown[1:-1] == sorted(shown[1:-1], key=lambda line: int(line.split()[0]))  # file order
    a, b = traj.turn_spans[1]
    (ca, cb), = cut.turn_spans
    assert cut.token_ids[ca:cb] == traj.token_ids[a:b] and cb == len(cut.token_ids)
    assert cut.assistant_mask == [0] * ca + [1] * (cb - ca)
    assert text.rstrip().endswith("</tool_call><|im_end|>") and "Fix the bug" not in text
    # other draws, other lines; every line at most all of them
    cuts = excerpts([traj], tok, copies=4, other_lines=3, seed=1)
    assert len(cuts) == 4 and len({tuple(c.token_ids) for c in cuts}) > 1
    whole = excerpt(traj, tok, 50, random.Random(0))
    assert tok.decode(whole.token_ids).count("\n") == text.count("\n") + 11 - 3


def test_no_excerpt_without_a_read_before_the_edit_or_its_line(tok):
    assert excerpt(episode(tok, [TEST, EDIT], ["1 failed", "Edited"]), tok, 3, random.Random(0)) is None
    assert excerpt(episode(tok, [READ, TEST], [SOURCE, "1 failed"]), tok, 3, random.Random(0)) is None
    elsewhere = SOURCE.replace("a - b", "a + b")
    assert excerpt(episode(tok, [READ, EDIT], [elsewhere, "not found"]), tok, 3, random.Random(0)) is None


ISSUE = "`alpha` in `gym/numbers.py` gives wrong results."


def issue_episode(tok, reply: str) -> Trajectory:
    return episode(tok, [reply], ["gym/numbers.py (3 lines)"], issue=ISSUE)


def test_path_excerpt_swaps_the_issues_file_and_trains_the_path_alone(tok):
    read = '<tool_call>\n{"name": "read", "arguments": {"path": "gym/numbers.py"}}\n</tool_call>'
    traj = issue_episode(tok, read)
    cut = path_excerpt(traj, tok, "gym/bolts.py")
    text = tok.decode(cut.token_ids)
    assert "`gym/bolts.py`" in text and "gym/numbers.py" not in text
    assert text.endswith('{"name": "read", "arguments": {"path": "gym/bolts.py"}}\n</tool_call><|im_end|>')
    trained = "".join(tok.decode([t]) for t, m in zip(cut.token_ids, cut.assistant_mask) if m)
    assert trained == "gym/bolts.py" and cut.turn_spans[0][1] == len(cut.token_ids)
    assert "tool_response" not in text  # the observation after the reply is not kept
    # a first call that opens another file, or names no path, teaches no copying
    other = read.replace("gym/numbers.py", "gym/strings.py")
    assert path_excerpt(issue_episode(tok, other), tok, "gym/bolts.py") is None
    assert path_excerpt(issue_episode(tok, TEST), tok, "gym/bolts.py") is None


def test_path_excerpts_draw_known_and_made_up_files(tok):
    read = '<tool_call>\n{"name": "read", "arguments": {"path": "gym/numbers.py"}}\n</tool_call>'
    cuts = path_excerpts([issue_episode(tok, read)], tok, copies=40, seed=0)
    paths = {c.info.extra["path"] for c in cuts}
    assert len(cuts) == 40 and "gym/numbers.py" in paths and len(paths) > 2
    assert all(p.startswith("gym/") and p.endswith(".py") for p in paths)  # a known file's folder and suffix
    assert path_excerpts([issue_episode(tok, TEST)], tok, copies=3, seed=0) == []

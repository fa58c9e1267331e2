"""Excerpt demonstrations: a curriculum that shows a model trained from scratch where to look in a read.

Trained on whole informed episodes (read the file, then the right edit), the demo's tiny policy
does not learn to pick the repair a read shows within any budget a laptop has: the one token that
tells the repair sits among ~500 others, and in 8 epochs of 700 such episodes it either stayed at
chance on held-out tasks or memorised train ones (README, demo). An excerpt keeps, of an
informed episode, only the read's observation cut to the lines that hold the edit's `old` text
and a few other lines drawn at random, and then the edit reply: ~100 tokens in which the line that
matters is one of a handful. On excerpts the same model learns the lookup in about a thousand
steps, and it carries over to whole episodes (see `DemoConfig.excerpt_copies`).

Excerpts are SFT data, not episodes: no environment produced them (the header line of the
observation still says how long the whole file is), and nothing evaluates or rolls out on them.
Only the edit reply is in the loss; the observation is re-tokenised (it is not policy output), the
reply's ids are the trajectory's own.
"""
from __future__ import annotations

import random
from typing import Any

from harness.chat import parse_tool_calls
from harness.trajectory import Trajectory
from envs.types import ToolCall


def _informed_edit(traj: Trajectory) -> tuple[int, str, str] | None:
    """(assistant turn index, the read's observation, the edit's `old` text) of the first edit
    that directly follows a read, or None."""
    turn, previous_read = -1, False
    messages = traj.messages
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        turn += 1
        call = parse_tool_calls(message.get("content") or "")
        if not isinstance(call, ToolCall):
            previous_read = False
            continue
        old = call.arguments.get("old")
        if call.name == "edit" and previous_read and isinstance(old, str) and old:
            observation = messages[i - 1].get("content") if messages[i - 1].get("role") == "tool" else None
            return (turn, observation, old) if isinstance(observation, str) else None
        previous_read = call.name == "read"
    return None


def excerpt(traj: Trajectory, tokenizer: Any, other_lines: int, rng: random.Random) -> Trajectory | None:
    """One excerpt of an informed episode (see the module docstring); None when the episode has
    no edit right after a read, or no line of the read holds the edit's `old` text (an `old` of
    several lines never does). Blank lines (a line number alone) are not drawn."""
    found = _informed_edit(traj)
    if found is None:
        return None
    turn, observation, old = found
    lines = observation.split("\n")
    marked = [j for j, line in enumerate(lines) if j and old in line]
    if not marked:
        return None
    others = [j for j in range(1, len(lines)) if j not in marked and not lines[j].strip().isdigit()]
    keep = sorted({0, *marked, *rng.sample(others, min(other_lines, len(others)))})
    shown = "\n".join(lines[j] for j in keep)
    start, end = traj.turn_spans[turn]
    # the tool turn as the chat format wrote it, with the observation cut
    _, previous_end = traj.turn_spans[turn - 1]
    tool_turn = tokenizer.decode(traj.token_ids[previous_end:start])
    if observation not in tool_turn:
        return None
    context = tokenizer(tool_turn.replace(observation, shown), add_special_tokens=False)["input_ids"]
    reply = traj.token_ids[start:end]
    return Trajectory(task_id=traj.task_id, token_ids=context + reply,
                      assistant_mask=[0] * len(context) + [1] * len(reply),
                      turn_spans=[(len(context), len(context) + len(reply))],
                      reward=traj.reward, info={"excerpt_of": traj.task_id, "outcome": traj.info.get("outcome")})


def excerpts(trajs: list[Trajectory], tokenizer: Any, copies: int, other_lines: int, seed: int) -> list[Trajectory]:
    """`copies` excerpts of each informed episode in `trajs` (different random lines each)."""
    rng = random.Random(seed)
    out = []
    for traj in trajs:
        for _ in range(copies):
            cut = excerpt(traj, tokenizer, other_lines, rng)
            if cut is not None:
                out.append(cut)
    return out

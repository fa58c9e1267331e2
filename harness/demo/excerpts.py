"""Excerpt demonstrations: a curriculum that shows a model trained from scratch where to look in a read.

Trained on whole informed episodes (read the file, then the right edit), the demo's tiny policy
does not learn to pick the repair a read shows within any budget a laptop has: the one token that
tells the repair sits among ~500 others, and in 8 epochs of 700 such episodes it either stayed at
chance on held-out tasks or memorised train ones (README, demo). An excerpt keeps, of an
informed episode, only the read's observation cut to the lines that hold the edit's `old` text
and a few other lines drawn at random, and then the edit reply: ~100 tokens in which the line that
matters is one of a handful. On excerpts the same model learns the lookup in about a thousand
steps, and it carries over to whole episodes (see `DemoConfig.excerpt_copies`).

The same holds for the first thing a call copies, the issue's path: the train split's functions sit
mostly in a few files, so a policy can guess those paths from what it was trained on and seldom
copy the issue's; on held-out tasks in rarer files its reads and edits go to another file (the
demo's seed 1 copied the path 0.43 of the time, teacher-forced). A path excerpt is an episode's
first reply with the issue's file swapped for another (`path_excerpts` says which), in the issue
and the reply alike, both re-tokenised, and only the path in the loss: the rest of the prompt is
the episode's own, so the copy learned is the one the first call needs.

Excerpts are SFT data, not episodes: no environment produced them (the header line of the
observation still says how long the whole file is), and nothing evaluates or rolls out on them.
Only the edit reply is in the loss; the observation is re-tokenised (it is not policy output), the
reply's ids are the trajectory's own.
"""
from __future__ import annotations

import json
import random
import re
from pathlib import PurePosixPath
from typing import Any

from fixrl.envs.types import EpisodeInfo, ToolCall
from fixrl.harness.agent.chat import parse_tool_calls
from fixrl.harness.agent.trajectory import Trajectory

_WORD = re.compile(r"\b[a-z]{4,}\b")


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
                      reward=traj.reward, info=EpisodeInfo(task_id=traj.task_id, outcome=traj.info.outcome,
                                       extra={"excerpt_of": traj.task_id}))


def path_excerpt(traj: Trajectory, tokenizer: Any, path: str) -> Trajectory | None:
    """The episode's context up to its first reply and that reply, with the file the reply's call
    names (and the issue names) swapped for `path`; only the path's tokens are in the loss (see the
    module docstring). None when the first reply's call has no `path`, or the issue does not name
    it (a policy that opened another file teaches no copying)."""
    named = _issue_path(traj)
    if named is None or not traj.turn_spans:
        return None
    start, end = traj.turn_spans[0]
    context, reply = tokenizer.decode(traj.token_ids[:start]), tokenizer.decode(traj.token_ids[start:end])
    if f"`{named}`" not in context:
        return None
    context, reply = context.replace(f"`{named}`", f"`{path}`"), reply.replace(named, path)
    value = reply.find(json.dumps(path))
    if value < 0:
        return None
    value_span = (value + 1, value + 1 + len(path))  # the path's characters, without the quotes
    context_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    encoded = tokenizer(reply, add_special_tokens=False, return_offsets_mapping=True)
    reply_ids = encoded["input_ids"]
    in_loss = [int(a < value_span[1] and b > value_span[0]) for a, b in encoded["offset_mapping"]]
    return Trajectory(task_id=traj.task_id, token_ids=context_ids + reply_ids,
                      assistant_mask=[0] * len(context_ids) + in_loss,
                      turn_spans=[(len(context_ids), len(context_ids) + len(reply_ids))],
                      reward=traj.reward,
                      info=EpisodeInfo(task_id=traj.task_id, extra={"excerpt_of": traj.task_id, "path": path}))


def path_excerpts(trajs: list[Trajectory], tokenizer: Any, copies: int, seed: int) -> list[Trajectory]:
    """`copies` path excerpts of each episode in `trajs` whose first call opens the issue's file.
    Half the swapped-in paths are files the episodes' issues name, drawn uniformly (a rare file as
    often as a common one); half are made up, a word from the episodes' text in a named file's
    folder (`gym/bolts.py`), so that copying, not recalling a known path, is what lowers the loss.
    On 25 real paths alone the tiny model still guessed the held-out files (0.43 copied, as
    without); with the made-up half, 0.81 after the first SFT stage (README)."""
    rng = random.Random(seed)
    named = sorted({p for t in trajs if (p := _issue_path(t)) is not None})
    words = sorted({w for t in trajs for m in t.messages for w in _WORD.findall(m.get("content") or "")})
    out = []
    for traj in trajs:
        for _ in range(copies if named else 0):
            path = rng.choice(named)
            if words and rng.random() < 0.5:
                path = str(PurePosixPath(path).with_stem(rng.choice(words)))
            cut = path_excerpt(traj, tokenizer, path)
            if cut is not None:
                out.append(cut)
    return out


def _issue_path(traj: Trajectory) -> str | None:
    """The path the first call names, if the issue (a user message) names it too."""
    reply = next((m.get("content") or "" for m in traj.messages if m.get("role") == "assistant"), "")
    call = parse_tool_calls(reply)
    path = call.arguments.get("path") if isinstance(call, ToolCall) else None
    issue = " ".join(m.get("content") or "" for m in traj.messages if m.get("role") == "user")
    return path if isinstance(path, str) and path and f"`{path}`" in issue else None


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

"""Teacher-forced read use: shown a read of the buggy file, does the policy choose the right repair?

The probe (`evals/probe.py`) says whether GRPO will see groups with mixed rewards. It does not say
where the passes come from: a start that reads now and then but picks the repair after a read no
better than a guess passes as often when it reads as when it does not, so GRPO has no reason to
make it read, and reading more would not help. This measure isolates the skill a read needs.

Feed the policy a scripted informed episode (read the file, then the right edit) up to the first
token of its edit's `old` text, the token that picks the repair, and count how often the policy's
most likely next token is the demonstrated one. Chance is about one in the number of repairs.
It measures one decision of a demonstrated context, not what the policy does in its own episodes
(where it may never read, or break the call before `old`): pair it with an evaluation.

A read helps only if it opens the issue's file, so the same pass also scores the copy that comes
first: is every token of the first call's path the most likely one, fed the episode up to it
(`path_share`). A policy that opens the wrong file half the time can pick the right repair in
every teacher-forced read and still fail: it never sees the file.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

_OLD_KEY = 'old": "'
_PATH_KEY = '"path": "'


@dataclass
class ReadUse:
    share: float | None
    """Share of decisions whose most likely token is the demonstrated one (None: no decisions)."""
    by_family: dict[str, float] = field(default_factory=dict)
    """The same share per task family (tasks without a family under "-")."""
    decisions: int = 0
    skipped: int = 0
    """Trajectories with no edit whose `old` text could be found in a reply."""
    path_share: float | None = None
    """Share of first calls whose whole `path` is the policy's most likely tokens (None: no
    trajectory's first call has a path)."""
    paths: int = 0
    """First calls with a path scored for `path_share`."""

    def to_dict(self) -> dict[str, Any]:
        return {"share": self.share, "by_family": self.by_family, "decisions": self.decisions,
                "skipped": self.skipped, "path_share": self.path_share, "paths": self.paths}

    def to_text(self) -> str:
        path = "" if self.path_share is None else f"; issue's path copied {self.path_share:.2f}"
        if self.share is None:
            return f"read use: no decisions to measure ({self.skipped} trajectories without an edit){path}"
        families = ", ".join(f"{k} {v:.2f}" for k, v in sorted(self.by_family.items()))
        return (f"read use (teacher-forced, {self.decisions} decisions): right repair picked after a "
                f"read {self.share:.2f} ({families}){path}")


def edit_old_position(token_ids: list[int], turn_spans: list[tuple[int, int]], old_key: list[int]) -> int | None:
    """Index of the first token of the first edit's `old` value: the first reply turn that holds
    the tokens of `old": "`, just past them. None when no reply has them."""
    n = len(old_key)
    for start, end in turn_spans:
        for i in range(start, end - n):
            if token_ids[i:i + n] == old_key:
                return i + n
    return None


def path_span(token_ids: list[int], turn_spans: list[tuple[int, int]], tokenizer: Any) -> tuple[int, int] | None:
    """[start, end) of the tokens of the first reply's `path` value (without its quotes), or None
    when the first reply has no `"path": "` or its value has no token before the closing quote."""
    if not turn_spans:
        return None
    start, end = turn_spans[0]
    text, begin = "", None
    for i in range(start, end):
        piece = tokenizer.decode([token_ids[i]])
        text += piece
        if begin is None and text.endswith(_PATH_KEY):
            begin = i + 1
        elif begin is not None and '"' in piece:
            return (begin, i) if i > begin else None
    return None


def read_use(model: Any, tokenizer: Any, trajectories: list[Any], family_of: dict[str, str | None]) -> ReadUse:
    """Teacher-force `model` (a causal LM) on informed `trajectories` (`Trajectory`), whose task's
    family `family_of[task_id]` gives; see the module docstring."""

    old_key = tokenizer(_OLD_KEY, add_special_tokens=False)["input_ids"]
    hits: dict[str, list[bool]] = {}
    copied: list[bool] = []
    skipped = 0
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for traj in trajectories:
                pos = edit_old_position(traj.token_ids, traj.turn_spans, old_key)
                path = path_span(traj.token_ids, traj.turn_spans, tokenizer)
                if pos is None:
                    skipped += 1
                if pos is None and path is None:
                    continue
                upto = max(pos or 0, path[1] if path else 0)
                prefix = torch.tensor([traj.token_ids[:upto]], device=device)  # [1, upto]
                predicted = model(input_ids=prefix, use_cache=False).logits[0].argmax(-1).tolist()  # [upto]
                if pos is not None:
                    family = family_of.get(traj.task_id) or "-"
                    hits.setdefault(family, []).append(predicted[pos - 1] == traj.token_ids[pos])
                if path is not None:
                    copied.append(all(predicted[i - 1] == traj.token_ids[i] for i in range(*path)))
    finally:
        model.train(was_training)
    every = [h for v in hits.values() for h in v]
    return ReadUse(share=sum(every) / len(every) if every else None,
                   by_family={k: sum(v) / len(v) for k, v in hits.items()},
                   decisions=len(every), skipped=skipped,
                   path_share=sum(copied) / len(copied) if copied else None, paths=len(copied))

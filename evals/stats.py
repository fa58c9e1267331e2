"""Behaviour statistics: what the policy did, not only whether it passed.

The design's lesson is that a rising pass rate can come from shortcuts (blind edits, stacking
guesses) rather than from reading the code; these numbers tell the two apart. They read
`Trajectory.info` (an envs.EpisodeInfo, or its dict form) and tolerate missing keys, so trajectories from an
older or partial env still summarise.

Errored episodes (a sandbox died) are counted apart and left out of every other figure: they say
nothing about the policy.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from fixrl.envs.types import EpisodeInfo

EXIT_STATUSES = ("submitted", "out_of_turns", "out_of_tokens", "malformed", "error")


def _info(t: Any) -> Mapping[str, Any]:
    if isinstance(t, Mapping):
        return t
    info = getattr(t, "info", None)
    return info.to_dict() if isinstance(info, EpisodeInfo) else (info or {})


def _policy_tokens(t: Any) -> int | None:
    if isinstance(t, Mapping):
        return None
    n = getattr(t, "num_policy_tokens", None)
    return int(n) if n is not None else None


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def is_error(info: Mapping[str, Any]) -> bool:
    return info.get("outcome") == "error"


def is_pass(info: Mapping[str, Any]) -> bool:
    return info.get("outcome") == "pass"


def behaviour_stats(episodes: Iterable[Any]) -> dict[str, Any]:
    """Per-episode means and shares over the episodes that did not error.

    `episodes`: Trajectory objects (info + policy tokens) or bare info dicts.
    A figure is None when no episode could give it (e.g. no episode edited).

    - reads / tests / edits / turns / policy_tokens: means per episode;
    - policy_tokens_pass / policy_tokens_fail: the same over passing / failing episodes;
    - exit_status: share of each way an episode ended;
    - read_before_edit: among episodes that edited, the share that read before the first edit;
    - reads_before_first_edit: its mean count, over the same episodes;
    - first_edit_right: among episodes whose task knows its fix and that edited, the share whose
      first applied edit was the reference fix's;
    - errors: episodes that errored (counted, not scored); episodes: all episodes given.
    """
    eps = list(episodes)
    scored = [e for e in eps if not is_error(_info(e))]
    infos = [_info(e) for e in scored]
    out: dict[str, Any] = {"episodes": len(eps), "errors": len(eps) - len(scored),
                           "scored": len(scored)}
    out["pass_rate"] = _mean([1.0 if is_pass(i) else 0.0 for i in infos])
    for key in ("reads", "tests", "edits", "turns", "malformed", "refused_edits"):
        out[key] = _mean([float(i[key]) for i in infos if i.get(key) is not None])
    toks = [(_policy_tokens(e), is_pass(_info(e))) for e in scored]
    out["policy_tokens"] = _mean([float(n) for n, _ in toks if n is not None])
    out["policy_tokens_pass"] = _mean([float(n) for n, p in toks if n is not None and p])
    out["policy_tokens_fail"] = _mean([float(n) for n, p in toks if n is not None and not p])
    counts = Counter(i.get("exit_status") or "unknown" for i in infos)
    out["exit_status"] = {s: counts[s] / len(infos) for s in sorted(counts)} if infos else {}
    edited = [i for i in infos if (i.get("edits") or 0) > 0]
    out["edited"] = len(edited)
    out["read_before_edit"] = _mean(
        [1.0 if (i.get("reads_before_first_edit") or 0) > 0 else 0.0 for i in edited])
    out["reads_before_first_edit"] = _mean(
        [float(i.get("reads_before_first_edit") or 0) for i in edited])
    known = [i["first_edit_right"] for i in infos if i.get("first_edit_right") is not None]
    out["first_edit_right"] = _mean([1.0 if r else 0.0 for r in known])
    out["first_edit_known"] = len(known)
    return out


def format_stat(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)

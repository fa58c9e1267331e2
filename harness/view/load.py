"""What `fixrl view` reads: a GRPO run directory, an eval output directory or a trajectories
JSONL file, as one `Source` record (episodes in file order, plus the run's own figures).

It reads the files those jobs write (train/rundir.py, evals/run.py, harness/agent/transcript.py)
directly, without torch: a run is viewed on a machine that never trained it. What it does not
guarantee: that a directory another program wrote in the same layout is understood, or that a
run still being written is read at a consistent point (a step file half-written is an error that
names it).
"""
from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fixrl.harness.agent.trajectory import Trajectory

Kind = Literal["grpo", "eval", "trajectories"]


class ViewError(ValueError):
    """Bad input to `fixrl view` (the message names the path and what was expected)."""


@dataclass(frozen=True)
class Episode:
    """One stored episode and where the run recorded it."""

    traj: Trajectory
    step: int | None = None
    """GRPO: the step whose rollout sampled it."""
    kept: bool | None = None
    """GRPO: whether it was trained on (its group kept by dynamic sampling)."""
    advantage: float | None = None
    """GRPO: its advantage (None when not trained on)."""


@dataclass(frozen=True)
class Source:
    """Everything a page is made from."""

    kind: Kind
    path: Path
    episodes: list[Episode]
    metrics: list[dict[str, Any]] = field(default_factory=list)
    """GRPO: metrics.jsonl, one row per step."""
    config: dict[str, Any] = field(default_factory=dict)
    """GRPO: config.json; eval: results.json without its per-task rows."""
    results: dict[str, Any] | None = None
    """Eval: results.json as written."""

    @property
    def model(self) -> str | None:
        """The base model directory the run names (its tokenizer decodes the tokens), if any."""
        m = self.config.get("model") or (self.config.get("policy") or {}).get("model")
        return str(m) if m else None


def load(path: Path | str) -> Source:
    """The source at `path`: a GRPO run (config.json + trajectories/), an eval directory
    (results.json) or a .jsonl / .jsonl.gz file of trajectories."""
    p = Path(path)
    if not p.exists():
        raise ViewError(f"{p}: no such file or directory (give a GRPO run directory, an eval "
                        f"directory written by `fixrl eval --out`, or a trajectories .jsonl[.gz] file)")
    if p.is_file():
        return Source("trajectories", p, [Episode(t) for t in _trajectories(p)])
    if _is_eval(p):
        return _eval(p)
    if (p / "trajectories").is_dir() or (p / "metrics.jsonl").is_file():
        return _grpo(p)
    # A directory of runs (the demo's): say which of its folders can be viewed.
    inside = sorted(c.name for c in p.iterdir() if c.is_dir() and (_is_eval(c) or (c / "trajectories").is_dir()))
    hint = f"; these folders in it are runs: {', '.join(inside)}" if inside else ""
    raise ViewError(f"{p}: neither a GRPO run (no trajectories/ or metrics.jsonl) nor an eval "
                    f"directory (no results.json with per-task rows); give one of those, or a trajectories "
                    f".jsonl[.gz] file{hint}")


def _is_eval(p: Path) -> bool:
    f = p / "results.json"
    if not f.is_file():
        return False
    results = _json(f)
    return isinstance(results, dict) and isinstance(results.get("tasks"), list)


def _grpo(p: Path) -> Source:
    episodes = []
    steps = sorted((p / "trajectories").glob("step_*.jsonl*")) if (p / "trajectories").is_dir() else []
    for f in steps:
        for row in _rows(f):
            episodes.append(Episode(_trajectory(row, f), step=_int(row.get("step")), kept=row.get("kept"),
                                    advantage=row.get("advantage")))
    metrics = [row for row in _rows(p / "metrics.jsonl")] if (p / "metrics.jsonl").is_file() else []
    config = _json(p / "config.json") if (p / "config.json").is_file() else {}
    return Source("grpo", p, episodes, metrics=metrics, config=config)


def _eval(p: Path) -> Source:
    results = _json(p / "results.json")
    found = [p / "trajectories.jsonl.gz", p / "trajectories.jsonl"]
    trajs = next((_trajectories(f) for f in found if f.is_file()), [])
    config = {k: v for k, v in results.items() if k != "tasks"}
    return Source("eval", p, [Episode(t) for t in trajs], config=config, results=results)


def _trajectories(f: Path) -> list[Trajectory]:
    return [_trajectory(row, f) for row in _rows(f)]


def _trajectory(row: dict[str, Any], f: Path) -> Trajectory:
    keep = {k: v for k, v in row.items() if k not in ("step", "kept", "advantage")}
    try:
        return Trajectory.from_dict(keep)
    except TypeError as e:
        raise ViewError(f"{f}: a line is not a fixrl trajectory ({e})") from None


def _rows(f: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if f.name.endswith(".gz") else open
    try:
        with opener(f, "rt", encoding="utf-8") as fh:
            for i, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ViewError(f"{f}:{i}: not JSON ({e}); a file still being written, or not fixrl's") from None
                if not isinstance(row, dict):
                    raise ViewError(f"{f}:{i}: expected a JSON object per line")
                yield row
    except (OSError, EOFError) as e:  # gzip.BadGzipFile is an OSError; a cut gzip an EOFError
        raise ViewError(f"{f}: cannot be read ({type(e).__name__}: {e})") from None


def _json(f: Path) -> Any:
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ViewError(f"{f}: cannot be read as JSON ({e})") from None


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

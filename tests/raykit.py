"""Helpers of the cluster tests: trajectories in a form two runs can be compared in, and what a
node left behind."""
from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from pathlib import Path

DURATION = re.compile(r"\b(passed|failed|error|errors|skipped|warnings?|deselected|xfailed|xpassed)"
                      r"( in )\d+(?:\.\d+)?s\b")


def _normal(text: str) -> str:
    """pytest's summary says how long the tests took ("3 passed in 0.05s"): the one part of an
    observation that differs between two runs of the same episode."""
    return DURATION.sub(r"\1\2_s", text)


def comparable(traj) -> dict:
    """A trajectory without what no two runs share: the seconds spent, and pytest's durations in
    observations (with those, the token ids of the tool turns differ too: then only the policy's
    own tokens are compared). Everything else must be equal."""
    d = traj.to_dict()
    d["info"].pop("seconds")
    timed = any(DURATION.search(m["content"] or "") for m in d["messages"])
    d["messages"] = [{**m, "content": _normal(m["content"] or "")} for m in d["messages"]]
    if timed:
        ids, mask = d.pop("token_ids"), d.pop("assistant_mask")
        d["sampled_ids"] = [t for t, m in zip(ids, mask, strict=True) if m]
        d.pop("turn_spans")
        d.pop("sampler_logprobs")
    return d


def owner_records(root: Path) -> list[dict]:
    """owner.json of every worker directory under a node root (or a cluster root's nodes)."""
    out = []
    for f in list(root.glob("workers/*/owner.json")) + list(root.glob("node*/workers/*/owner.json")):
        with contextlib.suppress(OSError, ValueError):
            out.append(json.loads(f.read_text()))
    return out


def containers(sessions: list[str]) -> list[str]:
    ids = []
    for s in sessions:
        res = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=fixrl.session={s}"],
                             capture_output=True, text=True, check=False)
        ids += res.stdout.split()
    return ids


def processes_under(root: Path) -> list[int]:
    """Processes whose command line names a path under `root` (sandboxes, reapers)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(root) in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


def left_behind(root: Path, sessions: list[str], docker: bool) -> dict:
    """Worker directories, containers (of `sessions`) and sandbox or reaper processes left under
    a node root, or under every node root of a local cluster."""
    workers = [p for p in [root / "workers", *root.glob("node*/workers")] if p.exists()]
    return {"dirs": sorted(str(d) for w in workers for d in w.iterdir()),
            "containers": containers(sessions) if docker else [],
            "processes": sorted(pid for w in workers for pid in processes_under(w))}


def wait_clean(root: Path, sessions: list[str], docker: bool, seconds: float = 45.0) -> dict:
    """What is still left under `root` after up to `seconds` (reapers work in the background)."""
    end = time.monotonic() + seconds
    while True:
        left = left_behind(root, sessions, docker)
        if not any(left.values()) or time.monotonic() > end:
            return left
        time.sleep(0.5)

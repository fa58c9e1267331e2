"""A cgroup of a local sandbox's own: its process and memory limits counted for the sandbox, not
per process or per user across the machine.

`SandboxCgroup.create(limits)` makes one group per sandbox where this host lets fixrl: as root
with cgroup v1 `pids` and `memory` hierarchies (a group under fixrl's own in each), or with
cgroup v2 where fixrl's parent group delegates both controllers to new children. In the group,
`pids.max` is `Limits.pids` (processes and threads together) and the memory limit
`Limits.memory_mb` (resident memory and page cache, no swap), so that threads, whose stacks and
malloc arenas are mostly reserved address space, cost what they use. Commands enter the group
before anything of theirs runs: `launch_prefix()` is a shell that writes its own pid into the
group and then execs the command. `limit_counters` / `limit_note` (sandbox.inside.server) say after a
command whether a limit was reached.

What it does not guarantee: a host without a usable cgroup (a non-root user without a delegated
v2 subtree) gets None, and the sandbox falls back to per-process rlimits (sandbox.local). The
group is removed on `close`; a host process killed with SIGKILL leaves an empty group behind
(named `fixrl-<pid>-<n>`, harmless, removable with rmdir).
"""
from __future__ import annotations

import itertools
import logging
import os
import shlex
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from fixrl.sandbox.base import Limits

log = logging.getLogger(__name__)

ROOT = Path("/sys/fs/cgroup")
_names = itertools.count()
_probe_lock = threading.Lock()
_layout: list = []  # [(version, {controller: parent dir}) | None, why]: probed once per process


def _own_paths() -> dict[str, str]:
    """controller ("" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    out: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for ctl in parts[1].split(",") if parts[1] else [""]:
                out[ctl] = parts[2]
    return out


def _v1_parents(own: dict[str, str]) -> dict[str, Path] | None:
    parents = {}
    for ctl in ("pids", "memory"):
        mount = ROOT / ctl
        if ctl not in own or not (mount / "cgroup.procs").exists():
            return None
        parents[ctl] = mount / own[ctl].lstrip("/")
    return parents


def _v2_parent(own: dict[str, str]) -> Path | None:
    if "" not in own or not (ROOT / "cgroup.controllers").exists():
        return None
    mine = ROOT / own[""].lstrip("/")
    # Our own group holds processes (us), so under cgroup v2's no-internal-process rule it cannot
    # hand controllers to children: the sandbox's group is made beside ours, in our parent.
    for parent in (mine.parent, mine):
        try:
            enabled = (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            continue
        if {"pids", "memory"} <= set(enabled):
            return parent
    return None


def _probe() -> tuple[tuple[int, dict[str, Path]] | None, str]:
    """Where sandbox groups can be made (version, controller -> parent), or None and why not."""
    own = _own_paths()
    v1 = _v1_parents(own)
    layout = (1, v1) if v1 else None
    if layout is None:
        parent = _v2_parent(own)
        layout = (2, {"": parent}) if parent else None
    if layout is None:
        return None, "no cgroup v1 pids+memory hierarchy nor a cgroup v2 group delegating pids and memory"
    for parent in layout[1].values():
        _remove_stale(parent)
    try:
        probe = SandboxCgroup._make(layout, Limits(), f"fixrl-{os.getpid()}-probe")
    except OSError as e:
        return None, f"cannot make a cgroup ({e})"
    probe.close()
    return layout, ""


def _remove_stale(parent: Path) -> None:
    """Empty groups left by fixrl processes that died without closing their sandboxes."""
    try:
        names = [p.name for p in parent.iterdir() if p.name.startswith("fixrl-")]
    except OSError:
        return
    for name in names:
        pid = name.split("-")[1]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            try:
                (parent / name).rmdir()
            except OSError:
                pass  # not empty, or not ours to remove


def unavailable_reason() -> str:
    """Why local sandboxes get no cgroup here ('' when they do)."""
    _ensure_probed()
    return _layout[1]


def _ensure_probed() -> None:
    with _probe_lock:
        if not _layout:
            _layout.extend(_probe())
            if _layout[0] is None:
                log.info("local sandboxes without a cgroup (%s): per-process rlimits instead", _layout[1])


@dataclass
class SandboxCgroup:
    version: int
    dirs: list[Path]
    """The group's directory in each hierarchy (one for v2)."""

    @classmethod
    def create(cls, limits: Limits) -> SandboxCgroup | None:
        """A new group with `limits` applied, or None where this host allows none (see
        `unavailable_reason`)."""
        _ensure_probed()
        layout = _layout[0]
        if layout is None:
            return None
        try:
            return cls._make(layout, limits, f"fixrl-{os.getpid()}-{next(_names)}")
        except OSError as e:  # e.g. the parent's group went away, or limits it cannot take
            log.warning("could not make a sandbox cgroup (%s): per-process rlimits instead", e)
            return None

    @classmethod
    def _make(cls, layout: tuple[int, dict[str, Path]], limits: Limits, name: str) -> SandboxCgroup:
        version, parents = layout
        group = cls(version, [])
        try:
            for ctl, parent in parents.items():
                d = parent / name
                d.mkdir()
                group.dirs.append(d)
                group._limit(ctl, d, limits)
        except BaseException:
            group.close()
            raise
        return group

    def _limit(self, ctl: str, d: Path, limits: Limits) -> None:
        mem = str(limits.memory_mb << 20)
        if ctl in ("", "pids"):
            (d / "pids.max").write_text(str(limits.pids))
        if ctl == "":
            (d / "memory.max").write_text(mem)
            if (d / "memory.swap.max").exists():
                (d / "memory.swap.max").write_text("0")
        elif ctl == "memory":
            (d / "memory.limit_in_bytes").write_text(mem)
            if (d / "memory.memsw.limit_in_bytes").exists():  # no swap: after the memory limit
                (d / "memory.memsw.limit_in_bytes").write_text(mem)

    def launch_prefix(self) -> list[str]:
        """argv prefix that runs the command inside the group (the shell joins it, then execs)."""
        joins = " && ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in self.dirs)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "fixrl-cgroup"]

    def procs(self) -> list[int]:
        pids: set[int] = set()
        for d in self.dirs:
            try:
                pids.update(int(p) for p in (d / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
        return sorted(pids)

    def kill(self) -> None:
        """SIGKILL every process in the group until none is left (a fork bomb keeps adding)."""
        for _ in range(500):
            pids = self.procs()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.002)
        log.warning("processes left in sandbox cgroup %s after 500 kill rounds", self.dirs[0])

    def close(self) -> None:
        self.kill()
        for d in self.dirs:
            for _ in range(100):  # a killed process leaves its group a moment after it died
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.005)
        self.dirs = []

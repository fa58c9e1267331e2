"""Cleaning up after a process that held sandboxes and died without closing them.

A process that keeps sandboxes under one directory of its own (an "owner directory": its
`owner.json` names the process, and `tempfile.tempdir` points under it, so every local sandbox
and workspace it makes lands there) can be watched by a reaper:

    spawn_reaper(owner_dir)      # after write_owner(owner_dir, session=docker.SESSION, docker=...)

The reaper is a small detached process (it survives its owner, and a kill of the owner's
process group or of its parent) that waits for the owner's death, then removes what the owner
left: Docker containers carrying the owner's session label, the processes of its local
sandboxes (bubblewrap processes naming the directory, processes of the sandboxes' own uids,
what is in their cgroups) and those cgroups, and the directory itself. `sweep(root)` does the
same for every dead owner under `root`: what a reaper could not do because the whole machine
went down with it.

A Ray worker node uses this for its environment workers (harness.agent.ray.worker): a worker
killed with SIGKILL, its node's processes killed, or the driver's death (Ray then kills the
job's actors) all end in a clean node.

Not guaranteed: a reaper killed by name or by uid along with its owner cleans nothing until the
next `sweep` of that root; a process id reused within one polling interval (0.5 s) is told apart
by its start time, read from /proc (Linux only).
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

log = logging.getLogger(__name__)

OWNER_FILE = "owner.json"
POLL_SECONDS = 0.5
SANDBOX_UIDS = range(1_000_000_000, 2_000_000_000)
"""The uids local sandboxes run as when the host process is root (sandbox.local)."""


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None
    when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else None


def alive(pid: int, started: int | None) -> bool:
    """True while process `pid` that started at `started` runs (a zombie counts as dead)."""
    now = start_time(pid)
    if now is None or (started is not None and now != started):
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
        return state[state.rindex(")") + 2] != "Z"
    except (OSError, IndexError):
        return False


def write_owner(owner_dir: Path, *, session: str | None = None, docker: bool = False, **extra: object) -> dict:
    """Create `owner_dir` and record this process as its owner; returns the record."""
    owner_dir.mkdir(parents=True, exist_ok=True)
    record = {"pid": os.getpid(), "start": start_time(os.getpid()), "session": session, "docker": docker,
              "created": time.time(), **extra}
    tmp = owner_dir / (OWNER_FILE + ".part")
    tmp.write_text(json.dumps(record))
    tmp.replace(owner_dir / OWNER_FILE)
    return record


def read_owner(owner_dir: Path) -> dict | None:
    try:
        return json.loads((owner_dir / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None


def owner_alive(owner_dir: Path) -> bool:
    rec = read_owner(owner_dir)
    return rec is not None and alive(int(rec["pid"]), rec.get("start"))


def _procs() -> list[tuple[int, str, int]]:
    """(pid, command line, uid) of every process that can be read."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            uid = os.stat(entry.path).st_uid
        except OSError:
            continue
        out.append((int(entry.name), cmdline, uid))
    return out


def _sandbox_uids(owner_dir: Path) -> set[int]:
    """The uids of the local sandboxes under `owner_dir` (their workspaces belong to them)."""
    uids = set()
    tmp = owner_dir / "tmp"
    for ws in tmp.glob("**/fixrl-local-*/workspace") if tmp.is_dir() else ():
        try:
            uid = ws.stat().st_uid
        except OSError:
            continue
        if uid in SANDBOX_UIDS:
            uids.add(uid)
    return uids


def kill_leftovers(owner_dir: Path) -> int:
    """SIGKILL the processes of the sandboxes under `owner_dir`; returns how many were signalled."""
    mark = str(owner_dir)
    uids = _sandbox_uids(owner_dir)
    me = os.getpid()
    killed = 0
    for _ in range(20):  # until none is left (a dying bwrap may still start a child)
        victims = [pid for pid, cmd, uid in _procs() if pid != me and (mark in cmd or uid in uids)]
        if not victims:
            break
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
    return killed


def remove_cgroups(pid: int, root: Path = Path("/sys/fs/cgroup")) -> int:
    """Kill what is left in the cgroups of process `pid`'s local sandboxes (sandbox.cgroup names
    them `fixrl-PID-N`) and remove them; returns how many were removed."""
    prefix = f"fixrl-{pid}-"
    groups = []
    for dirpath, dirnames, _ in os.walk(root):
        groups += [Path(dirpath, d) for d in dirnames if d.startswith(prefix)]
        dirnames[:] = [d for d in dirnames if not d.startswith(prefix)]
    removed = 0
    for group in sorted(groups, key=lambda p: -len(p.parts)):
        for _ in range(20):
            try:
                pids = [int(x) for x in (group / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                pids = []
            for p in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(p, signal.SIGKILL)
            try:
                group.rmdir()
                removed += 1
                break
            except OSError:
                time.sleep(0.05)
    return removed


def remove_containers(session: str) -> int:
    """Remove the Docker containers of one sandbox session label; 0 when no daemon answers."""
    try:
        # Here: the reaper stays a small process (no docker SDK) unless its owner used Docker.
        from fixrl.sandbox import docker as docker_backend  # noqa: PLC0415

        return docker_backend.cleanup(session)
    except Exception as e:  # noqa: BLE001 - no daemon: its containers died with it (auto-remove)
        log.warning("could not remove the containers of session %s: %s", session, e)
        return 0


def clean_owner(owner_dir: Path) -> dict:
    """Remove everything a dead owner left under `owner_dir` (and its containers); returns counts."""
    rec = read_owner(owner_dir) or {}
    containers = remove_containers(rec["session"]) if rec.get("docker") and rec.get("session") else 0
    killed = kill_leftovers(owner_dir)
    groups = remove_cgroups(int(rec["pid"])) if rec.get("pid") else 0
    shutil.rmtree(owner_dir, ignore_errors=True)
    return {"containers": containers, "processes": killed, "cgroups": groups, "removed": not owner_dir.exists()}


def sweep(root: Path, wait_for: set[str] | None = None, wait_seconds: float = 0.0) -> list[str]:
    """Clean every owner directory under `root` whose owner is dead; with `wait_for` (directory
    names), wait up to `wait_seconds` for those owners to die first. Returns the names cleaned."""
    root = Path(root)
    deadline = time.monotonic() + wait_seconds
    while wait_for and time.monotonic() < deadline:
        if not any(owner_alive(root / name) for name in wait_for if (root / name).exists()):
            break
        time.sleep(POLL_SECONDS / 5)
    cleaned = []
    for d in sorted(root.iterdir()) if root.is_dir() else ():
        if d.is_dir() and not owner_alive(d):
            # a directory without owner.json is one being made: leave it unless it is old
            if read_owner(d) is None and time.time() - d.stat().st_mtime < 60:
                continue
            clean_owner(d)
            cleaned.append(d.name)
    return cleaned


def spawn_reaper(owner_dir: Path) -> None:
    """Start a detached reaper for `owner_dir` (whose owner.json names this process). Returns once
    it runs: the intermediate process forks it off and exits, so it is nobody's child here."""
    subprocess.run([sys.executable, "-m", "fixrl.sandbox.reaper", str(owner_dir)], check=True, timeout=60,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   start_new_session=True)


def _watch(owner_dir: Path) -> None:
    rec = read_owner(owner_dir)
    if rec is None:
        return
    pid, started = int(rec["pid"]), rec.get("start")
    while alive(pid, started) and owner_dir.exists():
        time.sleep(POLL_SECONDS)
    if owner_dir.exists():
        clean_owner(owner_dir)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m fixrl.sandbox.reaper OWNER_DIR", file=sys.stderr)
        return 2
    if os.fork() > 0:   # the caller waits for this parent; the child is re-parented to init
        return 0
    os.setsid()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    _watch(Path(args[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The exec server: runs commands and touches files inside a sandbox. Standard library only.

Inside a Docker sandbox this file is the container's main process (PID 1), started with
`python3 -I -S /run/fixrl/lib/fixrl_inside/server.py` (sandbox.docker mounts the inside package
there). It reads length-prefixed JSON requests on stdin and writes
length-prefixed JSON replies on stdout; the host talks to it over the container's attach
stream, so a tool call costs one round trip through the daemon instead of a `docker exec`.
Being PID 1 it cannot be killed from inside the container (the kernel drops signals to a
namespace's init that it has no handler for, SIGKILL included), it reaps orphaned processes,
and it is marked non-dumpable so code of the same uid cannot ptrace it.

The LocalSandbox imports the same functions (`run_command`, `scan`, `apply`, ...) and calls
them in-process, so both backends share one implementation of output capping, timeouts,
and the workspace restore.

Reads (`read`, `read_many`) open non-blocking and refuse anything but a regular file
(`NotRegularFileError`): code in the sandbox can plant a FIFO or a device anywhere it writes,
and the server must answer every request.

Wire format, both directions: 4-byte big-endian length, then that many bytes of UTF-8 JSON.
A request is {"op": name, ...}; a reply is {"ok": true, ...} or {"ok": false, "error":
exception class name, "message": text}.
"""
from __future__ import annotations

import base64
import ctypes
import errno
import json
import os
import resource
import select
import shutil
import signal
import stat
import struct
import subprocess
import time

HEADER = struct.Struct(">I")
MAX_MESSAGE = 1 << 30
CHUNK = 1 << 16
EXIT_GRACE = 0.1
"""Seconds to keep reading after the command exited, for output still in the pipe; a
background process that keeps the pipe open is not waited for longer than this."""

_IS_INIT = os.getpid() == 1
_reaped: dict[int, int] = {}


# ----------------------------------------------------------------------------- processes


def _reap() -> None:
    """As PID 1, collect every exited child (orphans included) so zombies do not pile up
    against the pids limit; statuses are kept for the command we are waiting on."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _reaped[pid] = status


def _poll(pid: int) -> int | None:
    if _IS_INIT:
        _reap()
        status = _reaped.pop(pid, None)
    else:
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return -1
        if got == 0:
            status = None
    if status is None:
        return None
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code  # killed by signal N: 128+N, as a shell reports it


def _group_alive(pgid: int) -> bool:
    """Whether a process group still has a member that is not a zombie."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2:].split()  # state, ppid, pgrp, ...
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def kill_group(pgid: int) -> None:
    """SIGKILL a process group until no live member is left (a fork bomb keeps adding)."""
    for _ in range(500):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        if _IS_INIT:
            _reap()
        time.sleep(0.002)
        if not _group_alive(pgid):
            return


def kill_all() -> int:
    """As PID 1: kill every other process in the sandbox (leftovers of earlier commands)."""
    if not _IS_INIT:
        return 0
    n = 0
    for _ in range(200):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            break
        n += 1
        _reap()
        time.sleep(0.005)
    _reap()
    _reaped.clear()
    return n


class _Capped:
    """Keeps the first and last `limit // 2` bytes of a stream; counts what it drops."""

    def __init__(self, limit: int):
        self.head_limit = max(limit // 2, 0)
        self.tail_limit = max(limit - self.head_limit, 0)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - self.tail_limit
        if excess > 0:
            self.dropped += excess
            del self.tail[:excess]

    def text(self) -> str:
        if not self.dropped:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        marker = f"\n[... {self.dropped} bytes of output truncated ...]\n"
        return (bytes(self.head).decode("utf-8", "replace") + marker
                + bytes(self.tail).decode("utf-8", "replace"))


def run_command(argv: list[str], *, cwd: str, env: dict[str, str], timeout: float,
                max_output: int, cpu_seconds: int | None = None, oom_first: bool = False,
                on_timeout=None) -> dict:
    """Run argv in its own session; stdout+stderr interleaved, capped while reading.

    Returns {exit_code, output, timed_out, seconds, truncated}. On timeout the whole process
    group is killed and exit_code is -1. Never raises for what the command does; raises
    OSError when the command cannot be started at all (e.g. the pids limit is exhausted).
    `cpu_seconds` and `oom_first` are applied to the child right after it starts (no
    preexec_fn, so the fast vfork path is used; children it forks in the first instants
    escape the CPU limit but not the wall-clock timeout).
    """
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, close_fds=True)
    _limit_child(proc.pid, cpu_seconds, oom_first)
    out = _Capped(max_output)
    code: int | None = None
    timed_out = False
    try:
        code, timed_out = _pump(proc, out, start + timeout)
    finally:
        if timed_out:
            kill_group(proc.pid)
            if on_timeout is not None:
                on_timeout()
        # Background processes may still hold the pipe; they are not waited for (reset kills them).
        if code is None:
            for _ in range(400):
                code = _poll(proc.pid)
                if code is not None:
                    break
                time.sleep(0.005)
        proc.returncode = code if code is not None else -1  # we reaped it ourselves
        proc.stdout.close()
    return {
        "exit_code": -1 if timed_out else (code if code is not None else -1),
        "output": out.text(),
        "timed_out": timed_out,
        "seconds": time.monotonic() - start,
        "truncated": out.dropped > 0,
    }


def _pump(proc: subprocess.Popen, out: _Capped, deadline: float) -> tuple[int | None, bool]:
    """Read the command's output into `out` until it has exited and closed its output (or a
    grace period after its exit), or the deadline: (exit code or None, timed out)."""
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    code: int | None = None
    exited_at: float | None = None
    while True:
        now = time.monotonic()
        if now >= deadline and code is None:
            return None, True
        eof = _read_ready(fd, out, min(deadline - now, 0.02 if code is not None else 0.25))
        if code is None:
            code = _poll(proc.pid)
            if code is not None:
                exited_at = time.monotonic()
        if code is not None and (eof or time.monotonic() - exited_at > EXIT_GRACE):
            return code, False
        if eof and code is None:
            # Output closed; the process is exiting, or lives on without output.
            pause = 0.0001
            while code is None and time.monotonic() < deadline:
                time.sleep(pause)
                pause = min(pause * 2, 0.01)
                code = _poll(proc.pid)
            return code, code is None


def _read_ready(fd: int, out: _Capped, wait: float) -> bool:
    """One read of `fd` if it becomes readable within `wait` seconds; True at end of file."""
    try:
        ready, _, _ = select.select([fd], [], [], max(wait, 0))
    except InterruptedError:
        return False
    if not ready:
        return False
    try:
        chunk = os.read(fd, CHUNK)
    except BlockingIOError:
        return False
    if not chunk:
        return True
    out.add(chunk)
    return False


def bad_command(cmd: str) -> dict | None:
    """The result for a command that cannot be run at all (model output is bad input: a NUL
    byte, an argument list the kernel refuses), or None when it can be tried."""
    why = None
    if "\x00" in cmd:
        why = "the command contains a NUL byte"
    elif len(cmd.encode("utf-8", "replace")) > 100_000:
        why = "the command is longer than 100000 bytes; write a script file and run that"
    if why is None:
        return None
    return {"exit_code": 126, "output": f"sandbox: cannot run: {why}\n", "timed_out": False,
            "seconds": 0.0, "truncated": False}


def clean_text(text: str) -> str:
    """Text that encodes as UTF-8 (lone surrogates, e.g. from JSON escapes, become "?")."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _limit_child(pid: int, cpu_seconds: int | None, oom_first: bool) -> None:
    try:
        if cpu_seconds:
            resource.prlimit(pid, resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        if oom_first:  # the OOM killer picks the command, never the server
            with open(f"/proc/{pid}/oom_score_adj", "w") as f:
                f.write("1000")
    except OSError:
        pass  # it already exited


# ----------------------------------------------------------------------------- limits

CGROUP_ROOT = "/sys/fs/cgroup"


def own_cgroup_dirs() -> list[str]:
    """This process's cgroup directories that hold pids or memory limit files (inside a
    container: the container's own group, mounted at the hierarchy's root)."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        ctls = parts[1].split(",") if parts[1] else [""]
        for ctl in ctls:
            if ctl not in ("", "pids", "memory"):
                continue
            base = os.path.join(CGROUP_ROOT, ctl) if ctl else CGROUP_ROOT
            for d in (os.path.join(base, parts[2].lstrip("/")), base):
                if any(os.path.exists(os.path.join(d, n)) for n in ("pids.max", "memory.max", "memory.limit_in_bytes")):
                    if d not in out:
                        out.append(d)
                    break
    return out


def _keyed(path: str) -> dict[str, str]:
    try:
        with open(path) as f:
            return dict(line.split(None, 1) for line in f.read().splitlines() if " " in line)
    except OSError:
        return {}


def limit_counters(dirs: list[str]) -> dict[str, int]:
    """How often the groups' limits were hit so far: `pids` (process or thread starts refused),
    `oom_kill` (processes the memory limit killed)."""
    out = {"pids": 0, "oom_kill": 0}
    for d in dirs:
        for name, key, field in (("pids.events", "pids", "max"), ("memory.events", "oom_kill", "oom_kill"),
                                 ("memory.oom_control", "oom_kill", "oom_kill")):
            value = _keyed(os.path.join(d, name)).get(field)
            if value is not None and value.strip().isdigit():
                out[key] += int(value)
    return out


def limit_maxima(dirs: list[str]) -> dict[str, str]:
    """The groups' limits as set: `pids` (a number or "max"), `memory` (bytes or "max")."""
    out: dict[str, str] = {}
    for d in dirs:
        for key, name in (("pids", "pids.max"), ("memory", "memory.max"), ("memory", "memory.limit_in_bytes")):
            try:
                with open(os.path.join(d, name)) as f:
                    out.setdefault(key, f.read().strip())
            except OSError:
                continue
    return out


def limit_note(before: dict[str, int], after: dict[str, int], maxima: dict[str, str]) -> str:
    """Lines that say which of the sandbox's limits a command reached ('' for none)."""
    notes = []
    refused = after.get("pids", 0) - before.get("pids", 0)
    if refused > 0:
        notes.append(f"[sandbox: the process limit ({maxima.get('pids', '?')} processes and threads) was "
                     f"reached during this command: {refused} process or thread start(s) were refused]")
    killed = after.get("oom_kill", 0) - before.get("oom_kill", 0)
    if killed > 0:
        mem = maxima.get("memory", "")
        size = f"{int(mem) >> 20} MB" if mem.isdigit() else mem or "?"
        notes.append(f"[sandbox: the memory limit ({size}) was reached during this command: the kernel "
                     f"killed {killed} process(es)]")
    return "".join("\n" + n for n in notes) + ("\n" if notes else "")


def signal_note(exit_code: int) -> str:
    """A line for a command killed by the CPU-time or file-size rlimit ('' otherwise)."""
    if exit_code == 128 + signal.SIGXCPU:
        return "\n[sandbox: the CPU time limit was reached (the command's timeout, in CPU seconds)]\n"
    if exit_code == 128 + signal.SIGXFSZ:
        return "\n[sandbox: the file size limit was reached]\n"
    return ""


# ----------------------------------------------------------------------------- files


def stamp(st: os.stat_result) -> list:
    """What identifies a version of an entry without reading it. ctime cannot be set back by
    unprivileged code, so a modified file never keeps its stamp (see `settle`)."""
    if stat.S_ISDIR(st.st_mode):
        kind = "d"
    elif stat.S_ISLNK(st.st_mode):
        kind = "l"
    elif stat.S_ISREG(st.st_mode):
        kind = "f"
    else:
        kind = "o"
    return [kind, stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def scan(root: str) -> dict[str, list]:
    """Every entry under root (symlinks not followed): relative path -> stamp."""
    entries: dict[str, list] = {}
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            it = os.scandir(os.path.join(root, rel_dir) if rel_dir else root)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        with it:
            for e in it:
                rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                s = stamp(st)
                entries[rel] = s
                if s[0] == "d":
                    stack.append(rel)
    return entries


def _remove(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        try:
            os.chmod(path, 0o700)  # a read-only dir would make rmtree fail
        except OSError:
            pass
        shutil.rmtree(path, onerror=_force_remove)
    else:
        os.unlink(path)


def _force_remove(func, path, _exc) -> None:
    try:
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
            shutil.rmtree(path, onerror=_force_remove)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def _safe_parent(root: str, rel: str, owner: tuple[int, int] | None = None) -> str:
    """Create rel's parent directories as real directories (an entry that is a symlink or a
    file where a directory must be is removed first) and return the full path of rel."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"bad relative path {rel!r}")
    cur = root
    for p in parts[:-1]:
        cur = os.path.join(cur, p)
        try:
            st = os.lstat(cur)
            if not stat.S_ISDIR(st.st_mode):
                _remove(cur)
                _mkdir(cur, 0o755, owner)
        except FileNotFoundError:
            _mkdir(cur, 0o755, owner)
    return os.path.join(root, *parts)


def _mkdir(path: str, mode: int, owner: tuple[int, int] | None) -> None:
    os.mkdir(path, mode)
    if owner is not None:
        os.lchown(path, *owner)


def apply(root: str, delete: list[str], write: list[list],
          owner: tuple[int, int] | None = None) -> dict[str, list]:
    """Delete entries, then write entries [rel, kind, mode, data (bytes or base64)]; kind "d"
    makes a directory, "l" a symlink whose data is the target, "f" a file. Nothing is ever
    written through a symlink. With `owner` (uid, gid), everything written is chowned to it.
    Returns the new stamps of the written entries."""
    for rel in sorted(delete, key=lambda r: r.count("/")):
        _remove(_safe_parent(root, rel, owner))
    written = []
    dirs = []
    for rel, kind, mode, data in sorted(write, key=lambda w: w[0].count("/")):
        path = _safe_parent(root, rel, owner)
        if kind == "d":
            try:
                st = os.lstat(path)
                if not stat.S_ISDIR(st.st_mode):
                    _remove(path)
                    _mkdir(path, 0o700, owner)
            except FileNotFoundError:
                _mkdir(path, 0o700, owner)
            dirs.append((path, mode))
        else:
            _remove(path)
            raw = base64.b64decode(data) if isinstance(data, str) else data
            if kind == "l":
                os.symlink(raw.decode("utf-8", "surrogateescape"), path)
                if owner is not None:
                    os.lchown(path, *owner)
            else:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                try:
                    view = memoryview(raw)
                    while view:
                        view = view[os.write(fd, view):]
                    if owner is not None:
                        os.fchown(fd, *owner)
                    os.fchmod(fd, mode)
                finally:
                    os.close(fd)
        written.append(rel)
    for path, mode in reversed(dirs):  # last, deepest first: a read-only dir is filled before
        os.chmod(path, mode)
    stamps = {rel: stamp(os.lstat(os.path.join(root, rel))) for rel in written}
    if written:
        settle(root, max(s[4] for s in stamps.values()))
    return stamps


def settle(root: str, last_ctime_ns: int) -> None:
    """Return once the filesystem clock has moved past last_ctime_ns, so that any later
    change to a file we just wrote gets a different ctime (file timestamps are coarse:
    one kernel tick) and the next restore sees it. Costs at most one tick."""
    marker = os.path.join(root, ".fixrl-settle")
    for _ in range(1000):
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            now = os.fstat(fd).st_ctime_ns
            os.utime(fd)
            now = max(now, os.fstat(fd).st_ctime_ns)
        finally:
            os.close(fd)
            os.unlink(marker)
        if now > last_ctime_ns:
            return
        time.sleep(0.0005)


def clear_dir(path: str) -> None:
    """Remove everything inside path, keeping path itself."""
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return
    for name in names:
        try:
            _remove(os.path.join(path, name))
        except OSError:
            pass


class NotRegularFileError(OSError):
    """A path that is a FIFO, a socket or a device: never read (it could block forever or
    never end). Code in the sandbox can plant one anywhere it may write."""


def open_regular(path: str, follow: bool = True) -> int:
    """A read-only descriptor of `path`, which must be a regular file: opened non-blocking
    (a FIFO opens at once instead of waiting for a writer) and checked with fstat, so that a
    FIFO, a socket or a device raises NotRegularFileError without blocking. follow=False also
    refuses a symlink as the last component (ELOOP)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ENXIO:  # a Unix socket
            raise NotRegularFileError(e.errno, "not a regular file (a socket)", path) from None
        raise
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        os.set_blocking(fd, True)
        return fd
    os.close(fd)
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    raise NotRegularFileError(errno.EINVAL, f"not a regular file ({kind})", path)


def read_bytes(path: str, max_bytes: int, follow: bool = True) -> bytes:
    """At most `max_bytes` of a regular file (ValueError when it is larger; see open_regular)."""
    with os.fdopen(open_regular(path, follow), "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{path} is larger than {max_bytes} bytes")
    return data


def write_bytes(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


# ----------------------------------------------------------------------------- server


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _exec(req: dict) -> dict:
    kwargs = dict(cwd=req.get("cwd", "/"), env=req["env"], timeout=float(req["timeout"]),
                  max_output=int(req["max_output"]), cpu_seconds=req.get("cpu_seconds"),
                  oom_first=True)
    try:
        return run_command(req["argv"], **kwargs)
    except BlockingIOError:
        if not _IS_INIT:
            raise
        # The pids limit is exhausted by processes earlier commands left running (a fork
        # bomb in the background): kill them all so the sandbox stays usable, and say so.
        kill_all()
        res = run_command(req["argv"], **kwargs)
        res["output"] = ("[sandbox: process limit reached; every process left running by "
                         "earlier commands was killed]\n" + res["output"])
        return res


def handle(req: dict) -> dict:
    op = req.get("op")
    if op == "ping":
        return {"pid": os.getpid(), "uid": os.getuid()}
    if op == "exec":
        dirs = own_cgroup_dirs()
        before = limit_counters(dirs)
        res = _exec(req)
        res["output"] += limit_note(before, limit_counters(dirs), limit_maxima(dirs)) + signal_note(res["exit_code"])
        return res
    if op == "read":
        return {"data": _b64(read_bytes(req["path"], int(req["max_bytes"])))}
    if op == "read_many":
        root = req["root"]
        out = {}
        for rel in req["paths"]:
            path = os.path.join(root, rel)
            try:
                if os.path.islink(path):
                    out[rel] = _b64(os.readlink(path).encode("utf-8", "surrogateescape"))
                else:
                    out[rel] = _b64(read_bytes(path, int(req["max_bytes"])))
            except (OSError, ValueError):
                out[rel] = None
        return {"data": out}
    if op == "write":
        write_bytes(req["path"], base64.b64decode(req["data"]))
        return {}
    if op == "scan":
        return {"entries": scan(req["root"])}
    if op == "apply":
        return {"stamps": apply(req["root"], req.get("delete", []), req.get("write", []))}
    if op == "reset":
        killed = kill_all()
        for path in req.get("clear", []):
            clear_dir(path)
        return {"killed": killed, "entries": scan(req["root"])}
    if op == "kill_all":
        return {"killed": kill_all()}
    raise ValueError(f"unknown op {op!r}")


def _read_exact(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = os.read(fd, n - len(buf))
        except InterruptedError:
            continue
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def serve(fd_in: int = 0, fd_out: int = 1) -> None:
    while True:
        header = _read_exact(fd_in, HEADER.size)
        if header is None:
            return  # the host went away: stop (the container then stops and is removed)
        (n,) = HEADER.unpack(header)
        if n > MAX_MESSAGE:
            return
        body = _read_exact(fd_in, n)
        if body is None:
            return
        try:
            reply = {"ok": True, **handle(json.loads(body))}
        except Exception as e:  # a failed request is a reply, never the end of the server
            reply = {"ok": False, "error": type(e).__name__, "message": str(e),
                     "errno": getattr(e, "errno", None), "strerror": getattr(e, "strerror", None),
                     "filename": getattr(e, "filename", None)}
        out = json.dumps(reply).encode("utf-8")
        _write_all(fd_out, HEADER.pack(len(out)) + out)
        if _IS_INIT:
            _reap()


def main() -> None:
    # PID 1 ignores every signal it has no handler for; Python's own SIGINT handler would
    # make it killable by Ctrl-C from inside, so restore the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:  # non-dumpable: code of the same uid cannot ptrace or read our memory

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
        pass
    # Replies own the real stdout; anything else printed goes to stderr.
    fd_out = os.dup(1)
    os.dup2(2, 1)
    serve(0, fd_out)


if __name__ == "__main__":
    main()

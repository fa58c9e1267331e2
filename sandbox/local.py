"""LocalSandbox: the embedded backend that needs no daemon.

What it does:
- The workspace is copied into a private temporary directory; the host directory you pass is
  never modified. Commands run there (seen as /workspace under bubblewrap) with a private /tmp.
- Every command runs in its own session with a wall-clock timeout that kills the whole process
  group, under rlimits: CPU seconds (the timeout, rounded up), processes (`Limits.pids`), file
  size (`Limits.file_size_mb`). Output is read incrementally and capped (first and last halves
  kept, a visible marker in between), so a 100 MB print never sits in memory whole.
- Where the host lets fixrl make cgroups (root with cgroup v1, or a delegating cgroup v2 group;
  sandbox.cgroup), each sandbox has a group of its own: `Limits.pids` processes and threads and
  `Limits.memory_mb` of memory for the whole sandbox, so threads and subprocesses of a real test
  suite work within them. Elsewhere memory is bounded per process by address space
  (RLIMIT_AS, with glibc's malloc arenas capped at 2 so that threads fit). A limit a command
  reached is said at the end of its output (`[sandbox: ...]`: counted by the cgroup, or guessed
  from the usual messages under rlimits).
- /tmp and /dev/shm (multiprocessing's semaphores) are private to the sandbox and emptied by
  `reset`.
- When bubblewrap (`bwrap`) works here (checked once per process by running Python inside
  it; otherwise a warning is logged): no network (own network namespace), own pid/ipc/uts
  namespaces (every process a command leaves behind dies when it returns), no capabilities,
  and a read-only view of the host's system directories (/usr, /etc, /lib*, /opt) and of the
  Python installation that runs fixrl; /home, /root, /run, /var, /tmp and the rest of the
  host are not visible. Only the workspace and the private /tmp are writable; the sandbox's
  copy of fixrl's inside package (sandbox.shipping) is read-only at /run/fixrl/lib.
- Run as root, commands never run as root: each sandbox gets a uid of its own (drop done by
  `setpriv` inside bwrap, with an empty capability bounding set and no_new_privs), so they
  cannot read root's files or signal other sandboxes, and the process limit is per sandbox.
  Without bwrap, a root host refuses to start rather than run commands as root when the
  interpreter is not usable by that uid.
- `python`, `python3`, `python3.X` and `pytest` are the interpreter running fixrl
  (`sys.executable`), or an environment's (`python=`, sandbox.environment). Under bubblewrap an
  interpreter directory that lies under /tmp on the host is shown at /run/fixrl/host/tmp/...,
  never inside the sandbox's /tmp: `reset` empties that, and the interpreter's packages must
  survive every reset (a forking sandbox's interpreter lives across them).
- `read_file` (and `changed_files`) read regular files only: a FIFO, a socket or a device that
  code in the sandbox planted is refused (`NotRegularFileError`) without blocking; a symlink
  is never followed out of the sandbox.

What it does NOT protect against (use the Docker backend when that matters):
- Kernel exploits: commands share the host kernel, with no seccomp filter.
- Memory, without a cgroup: RLIMIT_AS bounds each process, not the sandbox; `pids` processes
  of `memory_mb` each can still exhaust the host's memory. There is no CPU share limit.
- Disk: files written to the workspace or /tmp are bounded per file, not in total.
- Everything world-readable in the host's system directories is readable (e.g. /etc/passwd).
- Without bubblewrap: no network isolation, the whole host filesystem is readable wherever
  permissions allow, commands see the real /tmp (TMPDIR points to the private one) and run
  in the workspace's host path, not /workspace; a non-root host user's commands run as that
  user and can signal and modify that user's other processes and files (`kill -9 -1` kills
  the host process too).
"""
from __future__ import annotations

import atexit
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from fixrl.sandbox import shipping
from fixrl.sandbox.base import HASH_SEED, WORKDIR, ExecResult, Limits, SandboxError
from fixrl.sandbox.cgroup import SandboxCgroup, unavailable_reason
from fixrl.sandbox.inside import server
from fixrl.sandbox.workspace import Pristine, changed_candidates, diff_contents, plan_restore, read_tree

log = logging.getLogger(__name__)

MAX_READ_BYTES = 16 << 20
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
BIN_IN_SANDBOX = "/run/fixrl/bin"
_probe_lock = threading.Lock()
_bwrap_ok: dict[bool, str | None] = {}  # running as root? -> None if bwrap works, else why not


HOST_IN_SANDBOX = "/run/fixrl/host"
"""Where bubblewrap shows an interpreter directory that lies under /tmp on the host (a checkout
or venv there): never inside the sandbox's own /tmp, which `reset` empties. Were it bound at its
own path, its mount point would be a folder of that /tmp, and emptying /tmp would unmount it
under a running forking sandbox's interpreter (its packages gone mid-life)."""
CLEARED = ("/tmp", "/dev/shm")
"""Sandbox paths whose contents `reset` removes."""


def python_dirs(python: str | None = None) -> list[str]:
    """Host directories an interpreter needs: the one running fixrl (venv and base installation)
    and, for `python` (an environment's interpreter, a venv made from fixrl's base), its venv."""
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
            os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    if python is not None:
        dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(python))))
    out = []
    for d in sorted(dirs):
        if d in ("/", "/usr") or any(d == s or d.startswith(s + "/") for s in SYSTEM_DIRS):
            continue
        if os.path.isdir(d) and not any(d.startswith(o + "/") for o in out):
            out.append(d)
    return out


def in_box(host_path: str) -> str:
    """Where bubblewrap shows an interpreter's host path (see HOST_IN_SANDBOX)."""
    if any(host_path == c or host_path.startswith(c + "/") for c in CLEARED):
        return HOST_IN_SANDBOX + host_path
    return host_path


def bwrap_args(ws: str, tmp: str, bindir: str, as_root: bool, network: bool = False,
               shm: str | None = None, lib: str | None = None, python: str | None = None) -> list[str]:
    """The bubblewrap command line up to the command. As root, bwrap runs privileged without
    a user namespace (the command then drops to the sandbox's uid, see `_limit_prefix`);
    otherwise it runs unprivileged in a user namespace of its own. `shm`: a private host
    directory for /dev/shm (multiprocessing's semaphores live there). `lib`: the sandbox's copy
    of the inside package (sandbox.shipping), bound read-only at LIB_IN_SANDBOX. `python`: an
    environment's interpreter (its venv is bound too)."""
    args = ["bwrap", "--tmpfs", "/"]
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    args += ["--perms", "0755", "--dir", os.path.dirname(os.path.dirname(BIN_IN_SANDBOX)),
             "--perms", "0755", "--dir", os.path.dirname(BIN_IN_SANDBOX)]
    args += ["--proc", "/proc", "--dev", "/dev", "--ro-bind-try", "/sys", "/sys",
             "--bind", ws, WORKDIR, "--bind", tmp, "/tmp", "--ro-bind", bindir, BIN_IN_SANDBOX]
    if shm is not None:
        args += ["--bind", shm, "/dev/shm"]
    if lib is not None:
        args += ["--ro-bind", lib, shipping.LIB_IN_SANDBOX]
    made: set[str] = set()
    for d in python_dirs(python):
        inside = in_box(d)
        parts = inside.strip("/").split("/")
        for i in range(1, len(parts)):  # parents traversable by the sandbox's uid
            parent = "/" + "/".join(parts[:i])
            if parent not in made and parent not in CLEARED:
                made.add(parent)
                args += ["--perms", "0755", "--dir", parent]
        args += ["--ro-bind", d, inside]
    args += ["--remount-ro", "/", "--hostname", "sandbox",
             "--die-with-parent", "--new-session", "--chdir", WORKDIR]
    if as_root:
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
        if not network:
            args.append("--unshare-net")
    else:
        args += ["--unshare-all", "--cap-drop", "ALL"] + (["--share-net"] if network else [])
    return args + ["--"]


def _limit_prefix(limits: Limits, cpu_seconds: int, nproc: int | None,
                  drop_to: int | None, address_space: bool = True, lib: str = shipping.LIB_IN_SANDBOX,
                  boxed: bool = True) -> list[str]:
    """Rlimits (and, as root, the switch to the sandbox's uid with no capabilities and
    no_new_privs) applied by a small program that then execs the command: a preexec_fn is
    not safe in a threaded host process. address_space: bound each process's address space
    by `limits.memory_mb` (the fallback where no cgroup limits the sandbox's memory). `lib`:
    where the command sees the inside package's copy (for `rlimits.py`, used without prlimit)."""
    mem = limits.memory_mb << 20 if address_space else -1
    fsize = limits.file_size_mb << 20
    if shutil.which("prlimit") and (drop_to is None or shutil.which("setpriv")):
        pre = []
        if drop_to is not None:
            pre = ["setpriv", f"--reuid={drop_to}", f"--regid={drop_to}", "--clear-groups",
                   "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"]
        pre += ["prlimit", f"--as={mem if mem >= 0 else 'unlimited'}", f"--cpu={cpu_seconds}:{cpu_seconds + 1}",
                f"--fsize={fsize}"]
        if nproc:
            pre.append(f"--nproc={nproc}")
        return pre + ["--"]
    exe = os.path.realpath(sys.executable)  # the base interpreter: with -S it needs no venv
    return [in_box(exe) if boxed else exe, "-S", shipping.in_sandbox("rlimits.py", lib), str(mem),
            str(cpu_seconds), str(fsize), str(nproc or 0), str(-1 if drop_to is None else drop_to)]


def _uid_procs(uid: int) -> list[int]:
    """Live (not zombie) processes of uid."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                state = ""
                for line in f:
                    if line.startswith("State:"):
                        state = line.split()[1]
                    elif line.startswith("Uid:"):
                        if int(line.split()[1]) == uid and state != "Z":
                            pids.append(int(name))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return pids


def kill_uid(uid: int) -> None:
    """SIGKILL every process of uid (a sandbox's own uid: root mode only)."""
    for _ in range(100):
        pids = _uid_procs(uid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.005)


_RLIMIT_SIGNS = ("can't start new thread", "Resource temporarily unavailable", "MemoryError",
                 "Cannot allocate memory", "BlockingIOError: [Errno 11]")


def _rlimit_guess(output: str, limits: Limits) -> str:
    """Without a cgroup nothing counts limit hits: name the rlimits when the output shows the
    messages they cause (a guess: the code may have failed so for its own reasons)."""
    if not any(sign in output for sign in _RLIMIT_SIGNS):
        return ""
    return (f"\n[sandbox: this may be a per-process limit of this sandbox: {limits.memory_mb} MB of address "
            f"space (Limits.memory_mb), {limits.pids} processes and threads (Limits.pids); no cgroup here "
            f"({unavailable_reason()})]\n")


_live: dict[int, LocalSandbox] = {}
_live_lock = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Sandboxes a caller forgot to close: kill their processes, remove their directories."""
    with _live_lock:
        live = list(_live.values())
    for sb in live:
        try:
            sb.close()
        except Exception:
            pass


class LocalSandbox:
    """A sandbox made of a temporary directory and limited subprocesses (see module docstring
    for what it protects against and what it does not)."""

    def __init__(self, workspace: Path, limits: Limits | None = None, *, isolation: str = "auto",
                 python: str | None = None):
        """isolation: "auto" (bubblewrap when it works, else a logged warning), "bwrap"
        (fail if it does not work) or "none". python: the interpreter commands run (an
        environment's, sandbox.environment); default: the one running fixrl."""
        self.limits = limits or Limits()
        self.python = python
        self._lock = threading.RLock()
        self._closed = False
        self._root = tempfile.mkdtemp(prefix="fixrl-local-")
        try:
            self._setup(Path(workspace), isolation)
        except BaseException:
            shutil.rmtree(self._root, ignore_errors=True)
            raise
        with _live_lock:
            _live[id(self)] = self

    def _setup(self, workspace: Path, isolation: str) -> None:
        entries = read_tree(workspace)  # raises SandboxError naming a missing workspace
        root = self._root
        self.uid = random.randrange(1_000_000_000, 2_000_000_000) if os.geteuid() == 0 else None
        owner = (self.uid, self.uid) if self.uid is not None else None
        self._owner = owner
        self.ws = os.path.join(root, "workspace")
        self.tmp = os.path.join(root, "tmp")
        self.bin = os.path.join(root, "bin")
        self.shm = os.path.join(root, "shm")
        self.lib = os.path.join(root, "lib")
        os.chmod(root, 0o711)
        for d, mode in ((self.ws, 0o755), (self.tmp, 0o700), (self.bin, 0o755), (self.shm, 0o700), (self.lib, 0o755)):
            os.mkdir(d, mode)
            if owner and d not in (self.bin, self.lib):
                os.chown(d, *owner)
        shipping.copy_package(Path(self.lib))  # read-only to the sandbox: not owned by its uid
        exe = os.path.abspath(self.python or sys.executable)
        # One shim for both views: under bubblewrap an interpreter from under /tmp is at in_box(exe).
        pick = f'exe="{exe}"; [ -x "{in_box(exe)}" ] && exe="{in_box(exe)}"'
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        shims = {"python": 'exec "$exe" "$@"', "python3": 'exec "$exe" "$@"', version: 'exec "$exe" "$@"',
                 "pytest": 'exec "$exe" -m pytest "$@"'}
        for name, line in shims.items():
            p = os.path.join(self.bin, name)
            with open(p, "w") as f:
                f.write(f"#!/bin/sh\n{pick}\n{line}\n")
            os.chmod(p, 0o755)
        self.cgroup = SandboxCgroup.create(self.limits)
        self.isolation = self._choose_isolation(isolation)
        if self.isolation == "none" and self.uid is not None:
            self._check_fallback_uid()
        self._pristine = Pristine(entries)
        self._load()

    def _choose_isolation(self, isolation: str) -> str:
        if isolation not in ("auto", "bwrap", "none"):
            raise ValueError(f"isolation must be auto, bwrap or none, not {isolation!r}")
        if isolation == "none":
            return "none"
        why = self._probe_bwrap()
        if why is None:
            return "bwrap"
        if isolation == "bwrap":
            raise SandboxError(f"bubblewrap does not work here: {why}")
        return "none"

    def _probe_bwrap(self) -> str | None:
        """Why bubblewrap cannot be used here (None: it works), checked once per process by
        running the interpreter inside a real sandbox (on a file of the inside package's copy,
        which the sandbox must see too)."""
        is_root = self.uid is not None
        with _probe_lock:
            if is_root not in _bwrap_ok:
                why = None
                if shutil.which("bwrap") is None:
                    why = "`bwrap` not found (install the bubblewrap package)"
                else:
                    argv = self._argv(f"python {shipping.in_sandbox('__init__.py')}", 30, isolation="bwrap")
                    try:
                        r = subprocess.run(argv, capture_output=True, timeout=30, cwd=self.ws,
                                           env=self._env("bwrap"))
                        if r.returncode != 0:
                            why = (r.stdout + r.stderr).decode(errors="replace").strip()[-500:] \
                                or f"exit {r.returncode}"
                    except (OSError, subprocess.SubprocessError) as e:
                        why = str(e)
                if why:
                    log.warning("LocalSandbox without bubblewrap (%s): commands get rlimits and "
                                "timeouts but NO network isolation and see the host filesystem", why)
                _bwrap_ok[is_root] = why
            return _bwrap_ok[is_root]

    def _check_fallback_uid(self) -> None:
        """Without bwrap, as root: the sandbox's uid must be able to run the interpreter (it
        cannot when Python lives under a private directory such as /root). Commands never
        run as root: a `kill -9 -1` there would take the whole machine down."""
        probe = f"python {shipping.in_sandbox('__init__.py', self.lib)}"  # a docstring: runs nothing
        r = subprocess.run(self._argv(probe, 30, isolation="none"), cwd=self.ws,
                           env=self._env("none"), capture_output=True, timeout=30)
        if r.returncode != 0:
            raise SandboxError(
                "LocalSandbox runs as root without bubblewrap, and the Python interpreter is not "
                "usable by an unprivileged uid: install bubblewrap (apt-get install bubblewrap), "
                "use the docker backend, or run fixrl from an interpreter outside /root. ("
                + (r.stdout + r.stderr).decode(errors="replace").strip()[-200:] + ")")

    # ------------------------------------------------------------------ commands

    def _env(self, isolation: str | None = None) -> dict[str, str]:
        boxed = (isolation or self.isolation) == "bwrap"
        return {
            "PATH": f"{BIN_IN_SANDBOX if boxed else self.bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp" if boxed else self.tmp,
            "TMPDIR": "/tmp" if boxed else self.tmp,
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            # a user site-packages (under HOME, i.e. the sandbox's /tmp, or the host's) is never
            # the task's environment: a .pth there would run before any test
            "PYTHONNOUSERSITE": "1",
            "PYTEST_ADDOPTS": "-p no:cacheprovider",
            "PYTHONHASHSEED": HASH_SEED,
            # Under a per-process address-space limit (no cgroup), glibc's per-thread malloc
            # arenas (64 MB of address space each) would stop a test suite at ~14 threads.
            **({} if self.cgroup else {"MALLOC_ARENA_MAX": "2"}),
        }

    def _argv(self, cmd: str, timeout: float, isolation: str | None = None) -> list[str]:
        return self.boxed_argv(["bash", "-c", cmd], int(timeout) + 1, isolation)

    def boxed_argv(self, argv: list[str], cpu_seconds: int, isolation: str | None = None,
                   group: SandboxCgroup | None = None) -> list[str]:
        """`argv` as this sandbox runs it: in its cgroup (or `group`; none where the host has
        none), under bubblewrap (if used), with its rlimits and, as root, its own uid."""
        isolation = isolation or self.isolation
        group = group or self.cgroup
        if group is not None:  # the cgroup's pids.max is the limit; this is a backstop
            nproc = self.limits.pids + 64
        elif self.uid is not None or isolation == "bwrap":
            nproc = self.limits.pids  # per sandbox uid (root) or per user namespace (bwrap)
        else:  # same user as the host process: its other processes count too
            nproc = len(_uid_procs(os.getuid())) + self.limits.pids
        lib = shipping.LIB_IN_SANDBOX if isolation == "bwrap" else self.lib
        inner = _limit_prefix(self.limits, cpu_seconds, nproc, self.uid, address_space=group is None, lib=lib,
                              boxed=isolation == "bwrap") + argv
        join = group.launch_prefix() if group else []
        if isolation == "bwrap":
            return join + bwrap_args(self.ws, self.tmp, self.bin, as_root=self.uid is not None,
                                     network=self.limits.network, shm=self.shm, lib=self.lib,
                                     python=self.python) + inner
        return join + inner

    def exec(self, cmd: str, timeout: float = 60.0) -> ExecResult:
        with self._lock:
            self._check_open()
            if os.geteuid() == 0 and self.uid is None:  # never run sandboxed code as root
                raise SandboxError("refusing to run a sandboxed command as root")
            cmd = server.clean_text(cmd)
            bad = server.bad_command(cmd)
            if bad is not None:
                return ExecResult(**bad)
            before = self.limit_counters()
            try:
                res = server.run_command(
                    self._argv(cmd, timeout), cwd=self.ws, env=self._env(), timeout=timeout,
                    max_output=self.limits.max_output_bytes, on_timeout=self._kill_leftovers)
            except OSError as e:
                raise SandboxError(f"could not start a command in the local sandbox: {e}") from e
            if self.isolation == "none" or self.cgroup:
                self._kill_leftovers()
            res["output"] += self.limit_note(before, res["output"], res["exit_code"])
            return ExecResult(**res)

    def limit_counters(self, group: SandboxCgroup | None = None) -> dict[str, int]:
        """Limit hits counted by the sandbox's cgroup (or `group`) so far (zeros without one)."""
        group = group or self.cgroup
        return server.limit_counters([str(d) for d in group.dirs]) if group else {}

    def limit_note(self, before: dict[str, int], output: str, exit_code: int,
                   group: SandboxCgroup | None = None) -> str:
        """What to add to a command's output about the limits it reached: counted by the cgroup
        (or `group`), or, under per-process rlimits, guessed from the output's usual messages."""
        group = group or self.cgroup
        if group:
            dirs = [str(d) for d in group.dirs]
            note = server.limit_note(before, self.limit_counters(group), server.limit_maxima(dirs))
        else:
            note = _rlimit_guess(output, self.limits)
        return note + server.signal_note(exit_code)

    def _kill_leftovers(self) -> None:
        # Under bwrap the pid namespace dies with the command, but its processes die a moment
        # later and, until then, count against the cgroup's limit: with a cgroup, everything
        # still in it is killed and waited for. As root every process of the sandbox's uid is
        # found and killed. A non-root host without bwrap or a cgroup cannot tell its own
        # processes from the sandbox's: background processes that left the process group
        # survive there (documented above).
        if self.cgroup is not None:
            self.cgroup.kill()
        if self.uid is not None and self.isolation != "bwrap":
            kill_uid(self.uid)

    # ------------------------------------------------------------------ files

    def _host_path(self, path: str) -> tuple[str, str]:
        """Map a sandbox path onto the host: (host path, the root it must stay inside)."""
        p = os.path.normpath(path if path.startswith("/") else f"{WORKDIR}/{path}")
        for inside, host in ((WORKDIR, self.ws), ("/tmp", self.tmp)):
            if p == inside or p.startswith(inside + "/"):
                return host + p[len(inside):], host
        if self.isolation == "none" and (p == self.ws or p.startswith(self.ws + "/")):
            return p, self.ws
        raise PermissionError(f"{path}: only {WORKDIR} and /tmp are accessible in the sandbox")

    def _resolve(self, path: str) -> str:
        host, root = self._host_path(path)
        real = os.path.realpath(host)
        real_root = os.path.realpath(root)
        if real != real_root and not real.startswith(real_root + "/"):
            # a symlink the sandboxed code planted must not make the host read or write for it
            raise PermissionError(f"{path}: resolves outside the sandbox")
        return real

    def read_file(self, path: str) -> str:
        with self._lock:
            self._check_open()
            real = self._resolve(path)
            # Never blocks: a FIFO, a socket or a device is refused (server.NotRegularFileError).
            return server.read_bytes(real, MAX_READ_BYTES, follow=False).decode("utf-8", "replace")

    def write_file(self, path: str, content: str) -> None:
        with self._lock:
            self._check_open()
            real = self._resolve(path)
            root = os.path.realpath(self._host_path(path)[1])
            rel = os.path.relpath(real, root)
            if rel == ".":
                raise IsADirectoryError(path)
            server._safe_parent(root, rel, self._owner)  # real directories, owned by the sandbox
            if os.path.islink(real):
                os.unlink(real)
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as f:
                if self._owner:
                    os.fchown(f.fileno(), *self._owner)
                f.write(content.encode("utf-8", "replace"))

    def changed_files(self) -> dict[str, str | None]:
        with self._lock:
            self._check_open()
            current = server.scan(self.ws)
            maybe, missing = changed_candidates(self._pristine, current)
            contents: dict[str, bytes | None] = {}
            for rel in maybe:
                p = os.path.join(self.ws, rel)
                try:
                    if os.path.islink(p):
                        contents[rel] = os.readlink(p).encode("utf-8", "surrogateescape")
                    else:
                        contents[rel] = server.read_bytes(p, MAX_READ_BYTES, follow=False)
                except (OSError, ValueError):  # a FIFO or a device in the workspace is not content
                    contents[rel] = None
            return diff_contents(self._pristine, maybe, missing, contents)

    # ------------------------------------------------------------------ lifetime

    def _load(self) -> None:
        """Write the whole pristine workspace into an emptied workspace directory."""
        server.clear_dir(self.ws)
        p = self._pristine
        p.stamps = server.apply(self.ws, [], [p.wire(rel) for rel in p.entries], self._owner)

    def reset(self, workspace: Path | None = None) -> None:
        with self._lock:
            self._check_open()
            self._kill_leftovers()
            server.clear_dir(self.tmp)
            server.clear_dir(self.shm)
            p = self._pristine
            if workspace is not None:
                entries = read_tree(Path(workspace))
                if entries != p.entries:
                    self._pristine = Pristine(entries)
                    self._load()
                    return
                # The same contents again (a pool reusing this sandbox for the same workspace):
                # restoring what changed gives the copy a full reload would, at the cost of a scan.
            delete, write = plan_restore(p, server.scan(self.ws))
            if delete or write:
                stamps = server.apply(self.ws, delete, [p.wire(rel) for rel in write], self._owner)
                for rel in delete:
                    p.stamps.pop(rel, None)
                p.stamps.update(stamps)

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError("sandbox is closed")

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._kill_leftovers()
            if self.cgroup:
                self.cgroup.close()
            shutil.rmtree(self._root, ignore_errors=True)
            with _live_lock:
                _live.pop(id(self), None)

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LocalSandbox({self.ws!r}, isolation={self.isolation!r})"

"""ForkingSandbox: a local sandbox that keeps one Python process ready to fork.

A hidden check's cost on a small repository is mostly starting Python and importing pytest
(docs/benchmarks.md has the figures), paid again by every episode. A ForkingSandbox runs a
long-lived interpreter (the "zygote", `sandbox/inside/zygote.py`) under the same bubblewrap
isolation, uid and rlimits as its commands; the zygote runs a caller's PRELUDE once (written as a
file beside the sandbox's read-only copy of the inside package, so its frames carry that file's
name, never `<string>`; e.g. importing pytest), then the
prelude's `_before_fork()` if it defines one (a warm-up: its errors are logged), and then, per
request, forks a child that runs one function of that prelude in WORKDIR, with the request's
environment, its output in a file under /tmp (unnamed until the call is over) and a CPU
limit, and exits with the function's return value. The child starts from the zygote's
memory, which never held repository code:
the zygote's sys.path has neither WORKDIR nor its own directory, and it never changes into
WORKDIR. The serving loop keeps each request in a function's frame, not in module globals a
child could read (requests carry no secret anyway: the check runner's verdict rests on
none; sandbox/inside/check). The call's output file is read only if it is still a regular file (a FIFO or a link
planted there is no output, and never blocks the host).

Between requests nothing of the previous one survives: when the child exits (or times out)
the zygote SIGKILLs every other process in its pid namespace (`kill(-1)`: all but bubblewrap's
init, which is root, and itself) until none is left (or exits, ending the namespace, if any
survives) and removes the SysV IPC objects of its IPC namespace; `reset` clears /tmp and
reloads WORKDIR. POSIX message queues (mq_open) of one call can outlive it.

What it does not guarantee:
- The child runs as the zygote's uid, so code under test can signal the zygote (stop or
  kill it). The zygote is non-dumpable (no ptrace, no /proc/PID/mem for the same uid). A
  zygote that dies or stops answering during a request ends that request as a failure of the
  code (`zygote_died`), as a killed pytest process would in a fresh sandbox, and is started
  again on the next request.
- Interpreter flags and PYTHON* variables other than PYTHONPATH cannot be given to a forked
  child; callers run such commands with `exec` instead. Children share the zygote's hash seed.
- Only with bubblewrap (its pid namespace is what makes the sweep complete):
  `forking` is False otherwise and callers use `exec`.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

from fixrl.sandbox import shipping
from fixrl.sandbox.base import WORKDIR, ExecResult, Limits, SandboxError
from fixrl.sandbox.cgroup import SandboxCgroup
from fixrl.sandbox.inside import server
from fixrl.sandbox.inside.server import _Capped
from fixrl.sandbox.local import LocalSandbox

log = logging.getLogger(__name__)

ZYGOTE_CPU_SECONDS = 10 ** 7
"""The zygote's own CPU limit (it only forks and waits); each child gets the request's."""
REPLY_GRACE = 15.0
"""Seconds past a call's timeout before its interpreter counts as hung (it kills on time)."""
START_TIMEOUT = 60.0
"""Seconds the zygote may take to run its prelude and say it is ready."""

class ZygoteDied(SandboxError):
    """The zygote died or stopped answering during a request. Callers that run code under
    test should count this against the code (it can kill the zygote), not retry it."""


class ForkingSandbox:
    """A LocalSandbox (every Sandbox method is its) plus `fork_python`: see the module docstring."""

    def __init__(self, workspace: Path, limits: Limits | None = None, *, isolation: str = "auto",
                 python: str | None = None):
        """python: an environment's interpreter (sandbox.environment); default: fixrl's."""
        self.sb = LocalSandbox(workspace, limits, isolation=isolation, python=python)
        # The zygote and its calls have a cgroup of their own (the sandbox's limits): the
        # sandbox's own group is emptied after every `exec`.
        self.group = SandboxCgroup.create(self.sb.limits) if self.sb.cgroup else None
        self._zygote: subprocess.Popen | None = None
        self._prelude: str | None = None
        self._buf = b""
        self._lock = threading.Lock()
        self.forks = 0
        """Calls made by forking (for tests and benchmarks)."""

    @property
    def forking(self) -> bool:
        return self.sb.isolation == "bwrap"

    # ------------------------------------------------------------------ the Sandbox protocol

    def exec(self, cmd: str, timeout: float = 60.0) -> ExecResult:
        return self.sb.exec(cmd, timeout)

    def read_file(self, path: str) -> str:
        return self.sb.read_file(path)

    def write_file(self, path: str, content: str) -> None:
        self.sb.write_file(path, content)

    def changed_files(self) -> dict[str, str | None]:
        return self.sb.changed_files()

    def reset(self, workspace: Path | None = None) -> None:
        # The zygote lives on: it never held repository state, and each call's processes
        # were swept when it returned.
        self.sb.reset(workspace)

    def close(self) -> None:
        with self._lock:
            self._stop()
            if self.group:
                self.group.close()
        self.sb.close()

    def __enter__(self) -> ForkingSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ForkingSandbox({self.sb.ws!r}, isolation={self.sb.isolation!r})"

    # ------------------------------------------------------------------ the zygote

    def fork_python(self, prelude: str, entry: str, kwargs: dict, *, env: dict[str, str] | None = None,
                    timeout: float = 60.0) -> ExecResult:
        """Call `entry(**kwargs)` (a function PRELUDE defines) in a fork of an interpreter that
        ran PRELUDE, in WORKDIR, as a command would run: the sandbox's environment plus `env`,
        output capped as `exec`'s, a CPU limit of the timeout. Exit status: entry's return
        value (70, with a traceback in the output, if it raised); -1 on timeout.

        Raises ZygoteDied when the interpreter died or hung during the call (see the module
        docstring), SandboxError when it could not be started."""
        if not self.forking:
            raise SandboxError("fork_python needs bubblewrap (check `forking` first)")
        with self._lock:
            self.sb._check_open()
            if self._zygote is None or self._zygote.poll() is not None or self._prelude != prelude:
                self._start(prelude)
            out = f"/tmp/.fixrl-out-{secrets.token_hex(8)}"
            req = {"entry": entry, "kwargs": kwargs, "cwd": WORKDIR, "env": {**self.sb._env(), **(env or {})},
                   "out": out, "timeout": float(timeout), "cpu": int(timeout) + 1}
            start = time.monotonic()
            self.forks += 1
            before = self.sb.limit_counters(self.group)
            try:
                assert self._zygote is not None and self._zygote.stdin is not None
                self._zygote.stdin.write((json.dumps(req) + "\n").encode())
                self._zygote.stdin.flush()
                reply = self._reply(timeout + REPLY_GRACE)
            except (OSError, ValueError, ZygoteDied) as e:
                self._stop()
                raise ZygoteDied(f"the forking sandbox's interpreter died during a call: {e}") from None
            output, truncated = self._take_output(out)
            output += self.sb.limit_note(before, output, int(reply["exit_code"]), self.group)
            return ExecResult(exit_code=int(reply["exit_code"]), output=output,
                              timed_out=bool(reply["timed_out"]),
                              seconds=time.monotonic() - start, truncated=truncated)

    def start(self, prelude: str) -> None:
        """Start the interpreter and run PRELUDE now rather than at the first call (a call
        with another prelude restarts it)."""
        with self._lock:
            self.sb._check_open()
            self._start(prelude)

    def _start(self, prelude: str) -> None:
        self._stop()
        sb = self.sb
        # The sandbox's cgroup, bubblewrap, rlimits and uid, as its commands get them.
        # No interpreter flags: a fork's sys.flags are the zygote's, and they must be those of the
        # one-shot runs `test` makes (`python LAUNCHER`), or code could tell the check from `test`.
        # The sandbox's environment has PYTHONNOUSERSITE; the zygote drops its own directory
        # from sys.path itself (what -P would have done).
        argv = sb.boxed_argv(["python", shipping.in_sandbox("zygote.py"), self._prelude_file(prelude)],
                             ZYGOTE_CPU_SECONDS, "bwrap", self.group)
        with open(self._log_path(), "ab") as log:
            try:
                self._zygote = subprocess.Popen(argv, cwd=sb.ws, env=sb._env(), stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                                                close_fds=True)
            except OSError as e:
                raise SandboxError(f"could not start the forking sandbox's interpreter: {e}") from e
        self._buf = b""
        try:
            reply = self._reply(START_TIMEOUT)
        except ZygoteDied as e:
            self._stop()
            raise SandboxError(f"the forking sandbox's interpreter did not start: {e}; "
                               f"its log: {self._log_tail()}") from None
        if not reply.get("ready"):
            self._stop()
            raise SandboxError(f"the forking sandbox's interpreter said {reply!r} instead of ready")
        self._prelude = prelude

    def _prelude_file(self, prelude: str) -> str:
        """PRELUDE as a file beside the sandbox's copy of the inside package (read-only to the
        sandbox); its path in the sandbox."""
        name = f"prelude_{hashlib.sha256(prelude.encode()).hexdigest()[:16]}.py"
        path = Path(self.sb.lib, name)
        if not path.exists():
            partial = path.with_suffix(".partial")
            partial.write_text(prelude, encoding="utf-8")
            partial.chmod(0o644)
            partial.replace(path)
        return f"{shipping.LIB_IN_SANDBOX}/{name}"

    def _log_path(self) -> str:
        return os.path.join(os.path.dirname(self.sb.ws), "zygote.log")  # outside the sandbox's view

    def _log_tail(self) -> str:
        try:
            return Path(self._log_path()).read_text(errors="replace")[-500:].strip() or "(empty)"
        except OSError:
            return "(none)"

    def _reply(self, timeout: float) -> dict:
        z = self._zygote
        assert z is not None and z.stdout is not None
        deadline = time.monotonic() + timeout
        fd = z.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ZygoteDied(f"no answer within {timeout:g}s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise ZygoteDied(f"it exited (status {z.poll()})")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def _stop(self) -> None:
        z, self._zygote, self._prelude = self._zygote, None, None
        if z is None:
            return
        try:
            os.killpg(z.pid, signal.SIGKILL)  # bwrap, and with its pid namespace all inside
        except (ProcessLookupError, PermissionError):
            pass
        if self.group:  # and wait for them to be gone: until then they count against its limits
            self.group.kill()
        for f in (z.stdin, z.stdout):
            try:
                f.close()
            except OSError:
                pass
        try:
            z.wait(timeout=10)
        except subprocess.TimeoutExpired:
            log.warning("the forking sandbox's interpreter (pid %d) did not exit", z.pid)

    def _take_output(self, path: str) -> tuple[str, bool]:
        capped = _Capped(self.sb.limits.max_output_bytes)
        try:
            real = self.sb._resolve(path)
            fd = server.open_regular(real, follow=False)
        except OSError:  # a link or a FIFO the code planted: not output (never a hang)
            return "", False
        with os.fdopen(fd, "rb") as f:
            while chunk := f.read(1 << 16):
                capped.add(chunk)
        try:
            os.unlink(real)
        except OSError:
            pass
        return capped.text(), capped.dropped > 0

"""The sandbox contract: a Protocol and the small records every backend returns.

What the code inside a sandbox does (non-zero exit, timeout, a crash) is an `ExecResult`.
What happens to the sandbox itself (daemon gone, container killed, exec server lost for
good) is a `SandboxError`, which callers may retry with a fresh sandbox.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

DEFAULT_IMAGE = os.environ.get("FIXRL_SANDBOX_IMAGE") or "fixrl-sandbox:base"
"""The base image of the Docker backend (`fixrl sandbox build-image`): `FIXRL_SANDBOX_IMAGE` when
set (read once, at import: a different tag for trying a changed recipe without replacing the
image other runs use), else `fixrl-sandbox:base`."""

WORKDIR = "/workspace"
"""Where the workspace lives inside every sandbox; relative paths are resolved against it."""
HASH_SEED = "0"
"""PYTHONHASHSEED of every process a sandbox starts, on every backend (the zygote a forked run
comes from included): parametrised test ids built from a set, and the order a set is iterated
in, must be the same in the generator's runs, validation, the `test` tool and the check. A
command that sets PYTHONHASHSEED itself overrides it in the runs it starts."""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    """The command's exit status; -1 when it was killed by the timeout."""
    output: str
    """stdout and stderr interleaved, decoded as UTF-8 with replacement, capped (see `truncated`)."""
    timed_out: bool
    seconds: float
    truncated: bool = False
    """True when the output was cut to the cap; the text then carries a visible marker."""


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the code inside it). Retry with a fresh sandbox."""


class SandboxConfigError(ValueError):
    """A sandbox setting that cannot work (unknown backend, pool size below 1, an image on a
    backend that runs none): the user's to fix. Not a SandboxError: nothing failed, and retrying
    would fail the same way."""


@dataclass(frozen=True)
class Limits:
    """Resource limits applied to everything run inside a sandbox."""

    memory_mb: int = 1024
    """Memory limit for the sandbox (Docker: the container; local: the sandbox's cgroup where the
    host allows one, else address space per process)."""
    cpus: float = 1.0
    """CPU share (Docker only; the local backend limits CPU seconds instead)."""
    pids: int = 256
    """Maximum number of processes and threads in the sandbox (a fork bomb stops here)."""
    file_size_mb: int = 64
    """Largest file a process may write."""
    max_output_bytes: int = 64_000
    """Output kept per exec; the rest is dropped inside the sandbox with a visible marker."""
    network: bool = False
    """Network access. Off by default; the reward must not depend on the outside world."""


@runtime_checkable
class Sandbox(Protocol):
    """An isolated workspace in which commands run.

    Paths given to read_file / write_file are relative to WORKDIR (or absolute inside the
    sandbox). A sandbox is a context manager: `with open_sandbox(...) as sb:` closes it.
    """

    def exec(self, cmd: str, timeout: float = 60.0) -> ExecResult:
        """Run a shell command in WORKDIR; never raises for what the command does."""
        ...

    def read_file(self, path: str) -> str:
        """Raise FileNotFoundError if it does not exist; SandboxError if the sandbox failed."""
        ...

    def write_file(self, path: str, content: str) -> None: ...

    def changed_files(self) -> dict[str, str | None]:
        """Files of WORKDIR whose content differs from the initial workspace: relative path ->
        new text, None for a deleted file. New files are included."""
        ...

    def reset(self, workspace: Path | None = None) -> None:
        """Restore WORKDIR to its initial state, kill leftover processes, clear /tmp.
        With `workspace`, load that host directory as the new initial state (pool reuse across tasks)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc) -> None: ...

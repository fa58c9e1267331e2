"""Isolation backends: where every tool call and every check runs.

    from fixrl.sandbox import open_sandbox, SandboxPool
    with open_sandbox(Path("repo"), backend="docker") as sb:
        sb.exec("python -m pytest -q", timeout=60)

`open_sandbox` copies the host directory in as the initial workspace (the host directory is
never modified). Backends: "local" (LocalSandbox: no daemon; see sandbox/local.py for what it
does not protect against) and "docker" (DockerSandbox: hardened container, persistent exec
server). `SandboxPool` keeps n of them for reuse across episodes.
"""
from __future__ import annotations

from pathlib import Path

from fixrl.sandbox.base import WORKDIR, ExecResult, Limits, Sandbox, SandboxError
from fixrl.sandbox.config import BACKENDS, SandboxConfig, SandboxConfigError
from fixrl.sandbox.pool import SandboxPool

DEFAULT_IMAGE = "fixrl-sandbox:base"
"""The base image: Debian bookworm minbase with python3 and pytest (`fixrl sandbox build-image`)."""


def open_sandbox(workspace: Path, backend: str = "local", image: str | None = None,
                 limits: Limits | None = None) -> Sandbox:
    """A new sandbox holding a copy of `workspace` at WORKDIR. `image` is for Docker only
    (default DEFAULT_IMAGE). Raises SandboxError with what to do when it cannot start."""
    if backend == "local":
        from fixrl.sandbox.local import LocalSandbox

        return LocalSandbox(Path(workspace), limits)
    if backend == "docker":
        from fixrl.sandbox.docker import DockerSandbox

        return DockerSandbox(Path(workspace), image=image or DEFAULT_IMAGE, limits=limits)
    raise ValueError(f"unknown sandbox backend {backend!r}: use one of {', '.join(BACKENDS)}")


__all__ = ["WORKDIR", "DEFAULT_IMAGE", "BACKENDS", "ExecResult", "Limits", "Sandbox",
           "SandboxError", "SandboxPool", "SandboxConfig", "SandboxConfigError", "open_sandbox"]

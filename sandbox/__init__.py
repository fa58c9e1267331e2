"""Isolation backends: where every tool call and every check runs.

    from fixrl.sandbox import open_sandbox, SandboxPool
    with open_sandbox(Path("repo"), backend="docker") as sb:
        sb.exec("python -m pytest -q", timeout=60)

`open_sandbox` copies the host directory in as the initial workspace (the host directory is
never modified). Backends: "local" (LocalSandbox: no daemon; see sandbox/local.py for what it
does not protect against) and "docker" (DockerSandbox: hardened container, persistent exec
server). `SandboxPool` keeps n of them for reuse across episodes.

What runs inside a sandbox -- the exec server, the forking sandbox's interpreter, the hidden
check's runner, the generator's pytest plugins -- is in `sandbox/inside` (it imports nothing
else of fixrl), and `sandbox.shipping` brings it there.
"""
from __future__ import annotations

from fixrl.sandbox.base import WORKDIR, ExecResult, Limits, Sandbox, SandboxError
from fixrl.sandbox.config import SandboxConfig, SandboxConfigError
from fixrl.sandbox.factory import BACKENDS, DEFAULT_IMAGE, open_sandbox
from fixrl.sandbox.inside.server import NotRegularFileError
from fixrl.sandbox.pool import SandboxPool

__all__ = ["WORKDIR", "DEFAULT_IMAGE", "BACKENDS", "ExecResult", "Limits", "Sandbox",
           "SandboxError", "NotRegularFileError", "SandboxPool", "SandboxConfig", "SandboxConfigError", "open_sandbox"]

"""open_sandbox: the one place a backend name becomes a sandbox."""
from __future__ import annotations

from pathlib import Path

from fixrl.sandbox.base import Limits, Sandbox
from fixrl.sandbox.docker import DockerSandbox
from fixrl.sandbox.environment import env_python, is_env_tag
from fixrl.sandbox.local import LocalSandbox

BACKENDS = ("local", "docker")

DEFAULT_IMAGE = "fixrl-sandbox:base"
"""The base image: Debian bookworm minbase with python3 and pytest (`fixrl sandbox build-image`)."""


def open_sandbox(workspace: Path, backend: str = "local", image: str | None = None,
                 limits: Limits | None = None) -> Sandbox:
    """A new sandbox holding a copy of `workspace` at WORKDIR. `image`: the Docker image
    (default DEFAULT_IMAGE), or an environment's tag (sandbox.environment), which the local
    backend runs as that environment's interpreter (other names it ignores).
    Raises SandboxError with what to do when it cannot start."""
    if backend == "local":
        python = env_python(image) if image is not None and is_env_tag(image) else None
        return LocalSandbox(Path(workspace), limits, python=python)
    if backend == "docker":
        return DockerSandbox(Path(workspace), image=image or DEFAULT_IMAGE, limits=limits)
    raise ValueError(f"unknown sandbox backend {backend!r}: use one of {', '.join(BACKENDS)}")

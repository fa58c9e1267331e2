"""Shared fixtures: the built-in suite, the tiny Qwen-format checkpoint (built once, cached),
and Docker availability. Tests mirror the package folders (tests/sandbox, tests/tasks, ...)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("FIXRL_CACHE", Path.home() / ".cache" / "fixrl"))


def docker_ok() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def docker_available() -> bool:
    # CI runs `make test`, which starts dockerd and builds the image first; a test that needs
    # Docker fails loudly rather than skipping when it is missing there.
    if not docker_ok():
        if os.environ.get("CI"):
            pytest.fail("Docker daemon not answering; `make test` should have started it")
        pytest.skip("no Docker daemon (run `make docker`)")
    return True


@pytest.fixture(scope="session")
def builtin_suite() -> Path:
    from fixrl.tasks.suites import BUILTIN_SUITE

    return BUILTIN_SUITE


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """A tiny Qwen2-architecture checkpoint with Qwen2.5's tokenizer, made by `fixrl init-tiny`."""
    from fixrl.harness.agent.tiny import init_tiny

    path = CACHE / "tiny-qwen2"
    if not (path / "config.json").exists():
        init_tiny(path)
    return path

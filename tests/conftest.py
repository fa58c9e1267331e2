"""Shared fixtures: the built-in suite, the tiny Qwen-format checkpoint (built once, cached),
Docker availability, and source distributions of real packages from PyPI. Tests mirror the
package folders (tests/sandbox, tests/tasks, ...)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


@pytest.fixture(scope="session")
def sdist():
    """`sdist(name, version)` -> the unpacked source distribution of a PyPI package (downloaded
    once with pip into the cache): real repositories nobody here wrote. Without PyPI the test
    is skipped, except in CI, where it fails."""
    import tarfile
    import zipfile

    def get(name: str, version: str) -> Path:
        root = CACHE / "sdists" / f"{name}-{version}"
        done = root / ".unpacked"
        if not done.exists():
            dl = root / "download"
            dl.mkdir(parents=True, exist_ok=True)
            r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
                                "-d", str(dl), f"{name}=={version}"], capture_output=True, text=True)
            archives = sorted(dl.iterdir())
            if r.returncode != 0 or not archives:
                why = f"cannot download the {name} {version} source distribution: {r.stderr.strip()[-300:]}"
                pytest.fail(why) if os.environ.get("CI") else pytest.skip(why)
            src = root / "src"
            shutil.rmtree(src, ignore_errors=True)
            if archives[0].suffix == ".zip":
                with zipfile.ZipFile(archives[0]) as z:
                    z.extractall(src)
            else:
                with tarfile.open(archives[0]) as t:
                    t.extractall(src, filter="data")
            done.write_text(archives[0].name)
        (top,) = [p for p in (root / "src").iterdir() if p.is_dir()]
        return top

    return get

"""Shared fixtures: a sandbox pool on every backend, the built-in suite, the tiny Qwen-format
checkpoint (built once, cached), Docker availability, and source distributions of real packages
from PyPI. Tests mirror the package folders (tests/sandbox, tests/tasks, ...)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from filelock import FileLock

from fixrl.harness.bench.errors import BenchError
from fixrl.harness.bench.sdist import SdistUnavailable, fetch_sdist
from fixrl.sandbox import SandboxPool

REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("FIXRL_CACHE", Path.home() / ".cache" / "fixrl"))


def cache_lock(path: Path) -> FileLock:
    """An inter-process lock beside `path` in the shared cache: `make test` runs two pytest-xdist
    workers, and two of them must never build the same checkpoint at once nor read a half-written
    one. Waits at most 10 minutes (a build that takes longer is hung)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(path.parent / f".{path.name}.lock"), timeout=600)


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


@pytest.fixture(scope="module", params=["fresh", "forking", pytest.param("docker", marks=pytest.mark.docker)])
def pool(request):
    """A pool of one sandbox per test module and kind: pytest started in a new interpreter, forked
    from the pre-imported one of a ForkingSandbox, and on Docker (marked `docker`): every test
    asking for `pool` runs on all three. A module that wants other kinds defines its own `pool`."""
    if request.param == "docker":
        request.getfixturevalue("docker_available")
    backend = "docker" if request.param == "docker" else "local"
    with SandboxPool(1, backend=backend, forking=request.param == "forking") as p:
        yield p


@pytest.fixture(scope="session")
def builtin_suite() -> Path:
    from fixrl.tasks.suites import BUILTIN_SUITE

    return BUILTIN_SUITE


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """A tiny Qwen2-architecture checkpoint with Qwen2.5's tokenizer, made by `fixrl init-tiny`."""
    from fixrl.harness.model.tiny import init_tiny

    path = CACHE / "tiny-qwen2"
    with cache_lock(path):
        if not (path / "config.json").exists():
            init_tiny(path)
    return path


@pytest.fixture(scope="session")
def ray_cluster():
    """A real Ray cluster of `ray start` processes on this machine: a head without sandbox slots
    and two worker nodes of 3 `fixrl_sandbox` slots each, with their own fixrl roots; the test
    helper folders are on the nodes' PYTHONPATH (a reward function must be importable there).
    Tests that add nodes kill them before they end, so every test sees these two."""
    try:
        import ray  # noqa: F401, PLC0415 - the optional extra; `make test` installs it
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("Ray is not installed; `make test` installs fixrl[ray]")
        pytest.skip("Ray is not installed (pip install 'fixrl[ray]')")
    from fixrl.harness.agent.ray.local_cluster import LocalCluster  # noqa: PLC0415 - only tests that use a cluster

    tests = Path(__file__).resolve().parent
    # Short: Ray's socket paths under it must stay within the 107 characters of a unix socket.
    root = Path(tempfile.mkdtemp(prefix="fixrl-ray-", dir="/tmp"))
    cluster = LocalCluster(root)
    try:
        cluster.start()
        for _ in range(2):
            cluster.add_node(3, env={"PYTHONPATH": os.pathsep.join([str(tests), str(tests / "train")])})
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def sdist():
    """`sdist(name, version)` -> the unpacked source distribution of a PyPI package (downloaded
    once with pip into the cache `fixrl bench repos` shares): real repositories nobody here wrote.
    Without PyPI the test is skipped, except in CI, where it fails; an archive that does not
    unpack into one folder fails everywhere."""
    def get(name: str, version: str) -> Path:
        try:
            return fetch_sdist(name, version, CACHE / "sdists")
        except SdistUnavailable as e:
            if os.environ.get("CI"):
                pytest.fail(str(e))
            pytest.skip(str(e))
        except BenchError as e:
            pytest.fail(str(e))

    return get


VLLM_PYTHON = REPO_ROOT / ".vllm-venv" / "bin" / "python"


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The interpreter of the vLLM server's venv (`make vllm`; `make test` builds it)."""
    if not VLLM_PYTHON.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{VLLM_PYTHON} is missing; `make test` should have built it (`make vllm`)")
        pytest.skip(f"no vLLM venv at {VLLM_PYTHON}: run `make vllm` to run the vLLM engine's tests")
    return VLLM_PYTHON


@pytest.fixture(scope="session")
def tiny32_model() -> Path:
    """The tiny checkpoint with a head size of 32 (vLLM's CPU attention needs >= 32)."""
    from fixrl.harness.model.tiny import init_tiny

    path = CACHE / "tiny-qwen2-head32"
    with cache_lock(path):
        if not (path / "config.json").exists():
            init_tiny(path, head_dim=32)
    return path


@pytest.fixture(scope="session")
def vllm_server(vllm_python, tiny32_model):
    """One real vLLM server for the whole session (start-up takes one to two minutes)."""
    from fixrl.harness.agent.policies.vllm_server import ServerSpec, VLLMServer

    with VLLMServer(ServerSpec(model=str(tiny32_model), python=str(vllm_python))) as server:
        yield server


# --- Parallel runs (`make test`: `pytest -n 2 --dist loadgroup --no-loadscope-reorder`) ---------


def pytest_configure(config):
    import xdistkit

    xdistkit.register(config)


_leaked_by_workers: list[str] = []
"""On the xdist controller: the containers the workers left behind (tests/sandbox/conftest.py)."""


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """A worker is done: keep what it reported leaked (`fixrl_leaked_containers`)."""
    _leaked_by_workers.extend(getattr(node, "workeroutput", {}).get("fixrl_leaked_containers", []))


def pytest_sessionfinish(session, exitstatus):
    """On the controller of a parallel run: a container a worker leaked fails the run."""
    if _leaked_by_workers:
        import sys
        print(f"\nERROR: containers left behind by the test workers: {_leaked_by_workers}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

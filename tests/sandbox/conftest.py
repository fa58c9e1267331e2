"""Fixtures for the sandbox tests: a small repository, sandboxes of both backends (shared
per module, reset between tests), and the end-of-session check that no container this
process started is left behind."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sandboxkit import BACKENDS, SMALL, make_repo

from fixrl.sandbox import open_sandbox


@pytest.fixture(scope="session")
def repo(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="session")
def repo2(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("repo2"), answer=2)


def _need(request, backend: str) -> None:
    if backend == "docker":
        request.getfixturevalue("docker_available")


@pytest.fixture(scope="module", params=BACKENDS)
def shared_sb(request, repo):
    _need(request, request.param)
    sb = open_sandbox(repo, backend=request.param)
    yield sb
    sb.close()


@pytest.fixture
def sb(shared_sb, repo):
    """A sandbox of each backend holding `repo`, freshly reset."""
    shared_sb.reset(repo)
    return shared_sb


@pytest.fixture(scope="module", params=BACKENDS)
def attack_pair(request, repo):
    """(attacker, bystander) sandboxes with small limits. Local attack tests need bubblewrap:
    without it nothing stops `kill -9 -1` or a fork bomb from reaching the host user."""
    _need(request, request.param)
    a = open_sandbox(repo, backend=request.param, limits=SMALL)
    if request.param == "local" and a.isolation != "bwrap":
        a.close()
        pytest.skip("LocalSandbox attacks need working bubblewrap (isolation=none here)")
    b = open_sandbox(repo, backend=request.param, limits=SMALL)
    yield a, b
    a.close()
    b.close()


@pytest.fixture
def attacker(attack_pair, repo):
    a, b = attack_pair
    a.reset(repo)
    return a


@pytest.fixture
def bystander(attack_pair):
    return attack_pair[1]


LEAKED_KEY = "fixrl_leaked_containers"
"""Where an xdist worker leaves the containers it leaked: its own exit status is not the run's, so
the controller fails the run on them (tests/conftest.py, `pytest_testnodedown`)."""


def _session_containers(session: str, wait_s: float = 30.0) -> list[str]:
    """The containers of this session still there after up to `wait_s`: a closed sandbox's
    container may still be in the daemon's removal (auto_remove, "removal already in progress")
    for seconds on a loaded machine; one that stays is a leak."""
    import time

    deadline = time.monotonic() + wait_s
    while True:
        try:
            left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=fixrl.session={session}"],
                                  capture_output=True, text=True, timeout=60).stdout.split()
        except (OSError, subprocess.SubprocessError):
            return []
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(1)


def pytest_sessionfinish(session, exitstatus):
    """After the whole session (every fixture of every folder torn down), no container this
    process started may remain: a leak fails the run. Each process (an xdist worker) counts only
    its own containers (its `fixrl.session` label), so parallel workers never see each other's."""
    import sys

    left: list[str] = []
    sd = sys.modules.get("fixrl.sandbox.docker")
    if sd is not None and sd._client is not None:  # a DockerSandbox was made in this process
        left = _session_containers(sd.SESSION)
    if not left:
        return
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[LEAKED_KEY] = left
    print(f"\nERROR: containers left behind by this test session: {left}", file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED

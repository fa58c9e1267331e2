"""SandboxPool: reuse across episodes, thread-safety, replacement of broken sandboxes."""
from __future__ import annotations

import os
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sandboxkit import BACKENDS

from fixrl.sandbox import SandboxError, SandboxPool


@pytest.fixture(params=BACKENDS)
def backend(request):
    if request.param == "docker":
        request.getfixturevalue("docker_available")
    return request.param


def test_reuse_resets_between_leases(backend, repo, repo2):
    with SandboxPool(1, backend=backend) as pool:
        with pool.acquire(repo) as sb:
            sb.exec("echo dirty > pkg/calc.py; echo new > new.txt")
            first = sb._sb
        with pool.acquire(repo2) as sb:
            assert sb._sb is first  # reused, not restarted
            assert "return 2" in sb.read_file("pkg/calc.py")
            assert sb.changed_files() == {}
        with pool.acquire(repo) as sb:
            assert "return 1" in sb.read_file("pkg/calc.py")
        assert pool.created == 1


def test_warm_starts_the_pool_ahead_of_its_leases(backend, repo, repo2, tmp_path):
    with SandboxPool(2, backend=backend) as pool:
        assert pool.warm(tmp_path) == 2
        assert pool.warm(tmp_path) == 0  # already full
        with pool.acquire(repo) as a, pool.acquire(repo2) as b:
            assert "return 1" in a.read_file("pkg/calc.py")
            assert "return 2" in b.read_file("pkg/calc.py")
        assert pool.created == 2  # the leases took the warm sandboxes


def test_concurrent_leases_are_isolated(backend, repo):
    n_workers, size = 6, 3
    seen_max = 0
    active = 0
    lock = threading.Lock()

    def episode(i: int) -> str:
        nonlocal active, seen_max
        with pool.acquire(repo) as sb:
            with lock:
                active += 1
                seen_max = max(seen_max, active)
            try:
                sb.write_file("owner.txt", str(i))
                r = sb.exec("sleep 0.2; cat owner.txt; ls", timeout=30)
                assert sb.changed_files() == {"owner.txt": str(i)}
                return r.output
            finally:
                with lock:
                    active -= 1

    with SandboxPool(size, backend=backend) as pool:
        with ThreadPoolExecutor(n_workers) as ex:
            outs = list(ex.map(episode, range(12)))
        assert pool.created <= size
    for i, out in enumerate(outs):
        assert out.startswith(f"{i}owner.txt\n"), out  # its own file, nobody else's
    assert seen_max <= size


def test_broken_sandbox_is_replaced(backend, repo):
    with SandboxPool(1, backend=backend) as pool:
        with pytest.raises(SandboxError), pool.acquire(repo) as sb:
            victim = sb._sb
            if backend == "docker":  # the container dies under us
                subprocess.run(["docker", "kill", victim.id], capture_output=True, check=True)
            else:
                victim.close()
            sb.exec("true")
        with pool.acquire(repo) as sb:
            assert sb._sb is not victim
            assert sb.exec("echo fine").output == "fine\n"
        assert pool.replaced == 1 and pool.created == 2


def test_caught_sandbox_error_still_replaces(repo):
    """A caller that catches the SandboxError itself (envs marks the episode `error`) must
    not get the broken sandbox back."""
    with SandboxPool(1, backend="local") as pool:
        with pool.acquire(repo) as sb:
            victim = sb._sb
            victim.close()
            try:
                sb.exec("true")
            except SandboxError:
                pass
        with pool.acquire(repo) as sb:
            assert sb._sb is not victim


def test_pool_size_must_be_positive():
    with pytest.raises(ValueError):
        SandboxPool(0)


def test_check_sandboxes_are_never_agent_sandboxes(backend, repo, repo2, tmp_path):
    """Hidden checks get sandboxes of their own: locally a second pool of forking sandboxes
    (started, with their interpreters, by warm), in Docker a new container each time."""
    with SandboxPool(3, backend=backend) as pool:
        prelude = "def ok():\n    return 0\n"
        pool.warm(tmp_path, check_prelude=prelude)
        with pool.acquire(repo) as agent:
            agent.exec("echo dirty > pkg/calc.py")
            with pool.check_sandbox(repo2) as csb:
                assert "return 2" in csb.read_file("pkg/calc.py")
                if backend == "local":
                    assert type(csb._sb).__name__ == "ForkingSandbox" and csb._sb is not agent._sb
                    if csb.forking:
                        assert csb._zygote is not None  # started by warm
                        assert csb.fork_python(prelude, "ok", {}).exit_code == 0
                else:
                    assert csb is not agent._sb
            if backend == "docker":  # a task's own image reaches its check container
                with pytest.raises(SandboxError, match="fixrl-no-such-image"):
                    pool.check_sandbox(repo2, image="fixrl-no-such-image:1")
        if backend == "local":
            checks = pool._checks
            assert checks.size == min(3, max(2, 2 * (os.cpu_count() or 1)))  # CPU-bound
            assert checks.created == checks.size
    assert pool._checks is None  # closed with the pool

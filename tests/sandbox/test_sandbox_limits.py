"""What ordinary test suites use -- threads, thread and process pools, subprocesses, temporary
files -- works in every backend within the sandbox's limits; the limits are the sandbox's own
(not per user across the machine); and a command that reaches one is told so in its output."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sandboxkit import BACKENDS

from fixrl.sandbox import Limits, open_sandbox
from fixrl.sandbox import cgroup as cg
from fixrl.sandbox.forking import ForkingSandbox
from fixrl.tasks.check.run import run_check
from fixrl.tasks.format.schema import Task

SUITE = '''\
import concurrent.futures, multiprocessing, os, subprocess, sys, tempfile, threading


def _square(x):
    return x * x


def test_threads():
    out = []
    threads = [threading.Thread(target=out.append, args=(i,)) for i in range(120)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(out) == list(range(120))


def test_thread_pool():
    with concurrent.futures.ThreadPoolExecutor(32) as ex:
        assert list(ex.map(_square, range(64))) == [x * x for x in range(64)]


def test_subprocess():
    done = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "42"


def test_fork_pool():
    with multiprocessing.get_context("fork").Pool(4) as pool:
        assert pool.map(_square, range(8)) == [x * x for x in range(8)]


def test_spawn_pool():
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
        assert list(ex.map(_square, range(4))) == [0, 1, 4, 9]


def test_temporary_files(tmp_path):
    with tempfile.NamedTemporaryFile("w+") as f:
        f.write("x" * 100_000)
        f.flush()
        f.seek(0)
        assert len(f.read()) == 100_000
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "a.txt"), "w") as g:
            g.write("hi")
        assert open(os.path.join(d, "a.txt")).read() == "hi"
    (tmp_path / "b").write_text("ok")
    assert (tmp_path / "b").read_text() == "ok"
'''
TESTS = ["test_threads", "test_thread_pool", "test_subprocess", "test_fork_pool", "test_spawn_pool",
         "test_temporary_files"]
THREADS = ("python -c \"import threading,time\n"
           "ts=[threading.Thread(target=time.sleep,args=(0.5,)) for _ in range({n})]\n"
           "[t.start() for t in ts]\n[t.join() for t in ts]\nprint('started', len(ts))\"")


@pytest.fixture(scope="module")
def suite_repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runtime")
    (root / "test_runtime.py").write_text(SUITE)
    return root


def _python(backend: str) -> str:
    return "python3" if backend == "docker" else "python"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_real_suites_runtime_needs_work(backend, suite_repo, request):
    if backend == "docker":
        request.getfixturevalue("docker_available")
    with open_sandbox(suite_repo, backend=backend) as sb:
        r = sb.exec(f"{_python(backend)} -m pytest -q -p no:cacheprovider test_runtime.py", timeout=120)
    assert r.exit_code == 0, r.output
    assert "6 passed" in r.output and "[sandbox:" not in r.output


def test_the_same_suite_as_a_forked_check(suite_repo):
    """The rollouts' check sandbox: the check forks from an interpreter that imported pytest."""
    task = Task(id="runtime", repo=str(suite_repo), issue="x", fix="x", check={
        "command": "python -m pytest -q test_runtime.py", "tests": [f"test_runtime.py::{t}" for t in TESTS]})
    with ForkingSandbox(suite_repo) as sb:
        if not sb.forking:
            pytest.skip("the forking sandbox needs bubblewrap")
        res = run_check(task, sb)
        assert sb.forks == 1
    assert res.passed, (res.reason, res.output[-2000:])


def test_process_limits_are_per_sandbox(suite_repo):
    """Two sandboxes each start 150 threads at once: 300 in all, more than one sandbox's 256,
    so a limit counted per user across the machine would stop one of them."""
    results = []
    with open_sandbox(suite_repo) as a, open_sandbox(suite_repo) as b:
        if a.cgroup is None and a.isolation != "bwrap":
            pytest.skip("per-sandbox process limits need a cgroup or bubblewrap's user namespace")
        runs = [threading.Thread(target=lambda s=s: results.append(s.exec(THREADS.format(n=150), timeout=60)))
                for s in (a, b)]
        for t in runs:
            t.start()
        for t in runs:
            t.join()
    assert [r.exit_code for r in results] == [0, 0], [r.output[-500:] for r in results]


@pytest.mark.parametrize("backend", BACKENDS)
def test_reaching_the_process_limit_is_said(backend, suite_repo, request):
    if backend == "docker":
        request.getfixturevalue("docker_available")
    with open_sandbox(suite_repo, backend=backend, limits=Limits(pids=48)) as sb:
        r = sb.exec(THREADS.format(n=100).replace("python", _python(backend), 1), timeout=60)
    assert r.exit_code != 0
    assert "can't start new thread" in r.output
    assert "[sandbox: the process limit (48 processes and threads) was reached" in r.output, r.output[-600:]


@pytest.mark.parametrize("backend", BACKENDS)
def test_reaching_the_memory_limit_is_said(backend, suite_repo, request):
    if backend == "docker":
        request.getfixturevalue("docker_available")
    hog = f"{_python(backend)} -c \"x = bytearray(400 << 20); x[::4096] = b'1' * len(x[::4096]); print('kept')\""
    with open_sandbox(suite_repo, backend=backend, limits=Limits(memory_mb=256)) as sb:
        r = sb.exec(hog, timeout=60)
        ok = sb.exec("echo fine", timeout=10)
    assert r.exit_code != 0 and "kept" not in r.output
    assert "[sandbox:" in r.output and "memory" in r.output, r.output[-600:]
    assert ok.output.strip() == "fine"


def test_a_forked_check_reaching_a_limit_says_so(suite_repo, tmp_path):
    (tmp_path / "test_many.py").write_text(
        "import threading, time\n\n\ndef test_many():\n"
        "    ts = [threading.Thread(target=time.sleep, args=(0.5,)) for _ in range(100)]\n"
        "    [t.start() for t in ts]\n    [t.join() for t in ts]\n")
    task = Task(id="many", repo=str(tmp_path), issue="x", fix="x",
                check={"command": "python -m pytest -q test_many.py", "tests": ["test_many.py::test_many"]})
    with ForkingSandbox(tmp_path, Limits(pids=48)) as sb:
        if not sb.forking or sb.sb.cgroup is None:
            pytest.skip("needs bubblewrap and a cgroup")
        res = run_check(task, sb)
    assert not res.passed and res.tests == {"test_many.py::test_many": "failed"}
    assert "[sandbox: the process limit (48 processes and threads) was reached" in res.output


def test_without_a_cgroup_threads_still_fit_and_a_hit_is_named(suite_repo, monkeypatch):
    """The fallback (a host that allows no cgroup): per-process rlimits, malloc arenas capped so
    that a hundred threads fit in the address space, and the limits named when a message shows
    one was likely reached."""
    monkeypatch.setattr(cg.SandboxCgroup, "create", classmethod(lambda cls, limits: None))
    with open_sandbox(suite_repo) as sb:
        assert sb.cgroup is None
        fits = sb.exec(THREADS.format(n=100), timeout=60)
        over = sb.exec(THREADS.format(n=400), timeout=60)
    assert fits.exit_code == 0 and "started 100" in fits.output, fits.output[-500:]
    assert over.exit_code != 0 and "[sandbox: this may be a per-process limit" in over.output


def test_cgroups_are_removed_on_close(suite_repo):
    with open_sandbox(suite_repo) as sb:
        dirs = list(sb.cgroup.dirs) if sb.cgroup else []
        sb.exec("sleep 30 &", timeout=10)
    if not dirs:
        pytest.skip(f"no cgroup here: {cg.unavailable_reason()}")
    assert all(d.exists() is False for d in dirs)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS + [pytest.param("forking", id="forking")])
def test_more_itertools_threaded_tests_pass(backend, sdist, request):
    """more-itertools 11.2.1's own threaded tests (50 threads sharing a synchronized generator,
    concurrent tee consumers), which stopped at "can't start new thread" under a per-process
    address-space limit."""
    if backend == "docker":
        request.getfixturevalue("docker_available")
    repo = sdist("more-itertools", "11.2.1")
    ids = ["tests/test_more.py::TestSynchronized", "tests/test_more.py::TestConcurrentTee"]
    if backend == "forking":
        task = Task(id="mi", repo=str(repo), issue="x", fix="x",
                    check={"command": "python -m pytest -q " + " ".join(ids)})
        with ForkingSandbox(repo) as sb:
            res = run_check(task, sb)
        assert res.passed and len(res.tests) >= 2, (res.reason, res.output[-1500:])
        return
    with open_sandbox(repo, backend=backend) as sb:
        r = sb.exec(f"{_python(backend)} -m pytest -q -p no:cacheprovider " + " ".join(ids), timeout=300)
    assert r.exit_code == 0 and "[sandbox:" not in r.output, r.output[-1500:]

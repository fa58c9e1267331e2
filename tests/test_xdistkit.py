"""tests/xdistkit.py, the split of `make test` between pytest-xdist workers, on a small project run
by real pytest and xdist: a file runs whole on one worker, the files sharing a slow session fixture
on the same one (the fixture made once), the slow groups first."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

CONFTEST = '''
import os
import pytest
import xdistkit

def pytest_configure(config):
    xdistkit.register(config)

def record(what):
    with open(os.environ["LOG"], "a") as f:
        f.write(f"{what} {os.environ.get('PYTEST_XDIST_WORKER', 'main')}\\n")

@pytest.fixture(scope="session")
def ray_cluster():
    record("made")
    return 1
'''

PLAIN = '''
import pytest
from conftest import record

@pytest.mark.parametrize("n", range({n}))
def test_{name}(n):
    record("{name}")
'''

SHARED = '''
from conftest import record

def test_{name}(ray_cluster):
    record("{name}")

def test_{name}_too():
    record("{name}")
'''

SLOW = '''
import pytest
from conftest import record

@pytest.mark.slow
def test_{name}():
    record("{name}")

@pytest.mark.xdist_group("solo")
def test_{name}_solo():
    record("solo")
'''


def make_project(root: Path) -> None:
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\naddopts =\n")
    (root / "conftest.py").write_text(CONFTEST)
    (root / "test_a.py").write_text(PLAIN.format(name="a", n=4))
    (root / "test_b.py").write_text(SHARED.format(name="b"))
    (root / "test_c.py").write_text(PLAIN.format(name="c", n=4))
    (root / "test_d.py").write_text(SHARED.format(name="d"))
    (root / "test_z.py").write_text(SLOW.format(name="z"))


def pytest_run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(root)]), "LOG": str(root / "log")}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_collection_order_puts_slow_groups_first_and_keeps_groups_together(tmp_path):
    make_project(tmp_path)
    r = pytest_run(tmp_path, "--collect-only", "-q")
    assert r.returncode == 0, r.stdout + r.stderr
    files = [line.split("::")[0] for line in r.stdout.splitlines() if "::" in line]
    # the slow file first (its `solo` test is a group of its own, not slow: after the slow ones);
    # then a, the ray_cluster group (b and d together although c lies between), c
    assert files == ["test_z.py"] + ["test_a.py"] * 4 + ["test_b.py"] * 2 + ["test_d.py"] * 2 + ["test_c.py"] * 4 \
        + ["test_z.py"], files


def test_two_workers_run_a_file_whole_and_share_a_session_fixture_once(tmp_path):
    make_project(tmp_path)
    r = pytest_run(tmp_path, "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder", "-q")
    assert r.returncode == 0 and "14 passed" in r.stdout, r.stdout + r.stderr
    rows = [line.split() for line in (tmp_path / "log").read_text().splitlines()]
    workers: dict[str, set[str]] = {}
    for what, worker in rows:
        workers.setdefault(what, set()).add(worker)
    assert all(len(w) == 1 and w != {"main"} for w in workers.values()), workers
    assert [what for what, _ in rows].count("made") == 1
    assert workers["b"] == workers["d"] == workers["made"]
    assert len(set().union(*workers.values())) == 2  # both workers got work

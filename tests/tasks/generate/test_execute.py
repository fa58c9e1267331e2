"""The generator's test runs (tasks.generate.execute) in real sandboxes: a forked run sees exactly the
files of its job, as a fresh interpreter would, whatever the warm interpreter and the
byte-compiled copy hold."""
from __future__ import annotations

from pathlib import Path

import pytest

from fixrl.tasks.generate.execute import LocalRunner, TestJob, run_job
from fixrl.tasks.generate.pipeline import _open_work, _write_plugins

CALC = "def add(a, b):\n    return a + b\n"
MUTANT = "def add(a, b):\n    return a - b\n"  # the same size: only its text tells it apart

TESTS = '''\
import sys

import packaging

from pkg.calc import add


def test_add():
    assert add(2, 1) == 3


def test_no_bytecode_written():
    # The sandbox sets PYTHONDONTWRITEBYTECODE, as a fresh interpreter there sees it.
    assert sys.dont_write_bytecode


def test_the_repositorys_own_packaging():
    assert getattr(packaging, "MINE", False), packaging.__file__
'''
"""`packaging`: the repository's own package of a name pytest itself imports on first use."""

IDS = ["test_calc.py::test_add", "test_calc.py::test_no_bytecode_written",
       "test_calc.py::test_the_repositorys_own_packaging"]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("calc") / "calc"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "calc.py").write_text(CALC)
    (repo / "packaging").mkdir()
    (repo / "packaging" / "__init__.py").write_text("MINE = True\n")
    (repo / "test_calc.py").write_text(TESTS)
    work = _open_work(repo, tmp_path_factory.mktemp("work"))
    _write_plugins(work)
    return work


def _outcomes(runner, work: Path, **job) -> dict[str, str]:
    res = run_job(work, runner.pool, TestJob("python -m pytest -q", 120, **job))
    assert res.report is not None, res.output
    if job.get("fork", True) and not res.forked:
        pytest.skip("no forked runs here (they need bubblewrap)")
    return {n: t["outcome"] for n, t in res.report["tests"].items()}


def test_the_copy_is_compiled_with_hash_checked_bytecode(work):
    pyc = next((work / "pkg" / "__pycache__").glob("calc.*.pyc"))
    assert int.from_bytes(pyc.read_bytes()[4:8], "little") == 0b11  # hash-based, checked


@pytest.mark.parametrize("fork", [True, False])
def test_a_run_sees_its_mutant_and_the_next_run_does_not(work, fork):
    with LocalRunner(1) as runner:  # one sandbox: the three runs share it
        clean = _outcomes(runner, work, fork=fork)
        mutant = _outcomes(runner, work, fork=fork, file="pkg/calc.py", source=MUTANT)
        again = _outcomes(runner, work, fork=fork, select=tuple(IDS), plain_asserts=True)
    assert clean == again == dict.fromkeys(IDS, "passed")
    assert mutant == {**clean, "test_calc.py::test_add": "failed"}

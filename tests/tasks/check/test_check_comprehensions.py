"""The guard's rewrite of the hidden tests' comparisons compiles wherever Python allows a
comparison: inside a comprehension's iterable (marshmallow's tests), where CPython refuses an
assignment expression even in a nested lambda. A correct fix passes, the bug still fails."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from suitekit import fix_task, write_repo

from fixrl.sandbox import SandboxPool
from fixrl.tasks import Task, run_check

GOOD = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"

HIDDEN = textwrap.dedent('''\
    from calc import add, mul


    def test_add():
        assert [ok for ok in (add(1, 2) == 3, add(2, 2) != 5) if not ok] == []


    def test_mul():
        assert {k: v for k, v in [("m", mul(2, 3) == 6)]} == {"m": True}
''')


@pytest.fixture(scope="module", params=["fresh", "forking"])
def pool(request):
    with SandboxPool(1, backend="local", forking=request.param == "forking") as p:
        yield p


@pytest.mark.parametrize("calc,outcome", [(GOOD, "pass"), (BUGGY, "fail")], ids=["fixed", "buggy"])
def test_comparisons_in_a_comprehensions_iterable(pool, tmp_path: Path, calc, outcome):
    ws = write_repo(tmp_path / "ws")
    (ws / "calc.py").write_text(calc)
    task = Task.model_validate(fix_task("t", repo=str(ws), check={"files": {"tests/test_hidden.py": HIDDEN}}))
    with pool.acquire(ws) as sb:
        r = run_check(task, sb)
    assert r.outcome == outcome, (r.reason, r.output[-1500:])
    if outcome == "fail":
        assert r.tests["tests/test_hidden.py::test_add"] == "failed" and r.tests["tests/test_hidden.py::test_mul"] == "passed"

"""The check's guard and time-faking test libraries (freezegun, as itsdangerous' tests use it):
a repository's unchanged helper that swaps the standard clocks in every module while a test
runs, pytest's own references included, is the tests doing what they always did (a correct fix
passes); a clock stand-in of changed code, or a trusted helper swapping something of pytest's
that is no clock, is still tampering."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from suitekit import fix_task, write_repo

from fixrl.sandbox import SandboxPool
from fixrl.tasks import Task, run_check
from fixrl.tasks.check.guard import spec_for

GOOD = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"

# What freezegun does, in a few lines of our own: every loaded module's reference to a standard
# clock (a function, or the datetime class) is swapped for a fake one, and put back afterwards.
FAKETIME = textwrap.dedent('''\
    import contextlib
    import datetime
    import sys
    import time

    FROZEN = 1e9


    def fake_time():
        return FROZEN


    class FakeDatetime(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.datetime.fromtimestamp(FROZEN, tz)


    FakeDatetime.min = FakeDatetime(1, 1, 1)  # as freezegun's: a value of the class in its namespace

    @contextlib.contextmanager
    def frozen(extra=()):
        real = {time.time: fake_time, time.perf_counter: fake_time, datetime.datetime: FakeDatetime, **dict(extra)}
        undo = []
        for mod in list(sys.modules.values()):
            names = getattr(mod, "__dict__", {})
            for name, val in list(names.items()):
                for orig, fake in real.items():
                    if val is orig:
                        undo.append((names, name, val))
                        names[name] = fake
        try:
            yield
        finally:
            for names, name, val in undo:
                names[name] = val
''')

HIDDEN = textwrap.dedent('''\
    import pytest
    from calc import add, mul
    from faketime import frozen


    @pytest.fixture(autouse=True)
    def _frozen():
        with frozen(EXTRA):
            yield


    def test_add():
        assert add(1, 2) == 3


    def test_mul():
        assert mul(2, 3) == 6
''')


@pytest.fixture(scope="module", params=["fresh", "forking"])
def pool(request):
    with SandboxPool(1, backend="local", forking=request.param == "forking") as p:
        yield p


def judge(pool, tmp_path: Path, calc: str, extra: str = "()"):
    ws = write_repo(tmp_path / "ws")
    (ws / "calc.py").write_text(calc)
    (ws / "faketime.py").write_text(FAKETIME)
    hidden = HIDDEN.replace("EXTRA", extra)
    check = {"timeout": 20, "files": {"tests/test_hidden.py": hidden}}
    task = Task.model_validate(fix_task("t", repo=str(ws), check=check))
    with pool.acquire(ws) as sb:
        return run_check(task, sb, guard=spec_for({"calc.py": (BUGGY, None)}))


def test_a_correct_fix_passes_while_the_tests_freeze_time(pool, tmp_path):
    r = judge(pool, tmp_path, GOOD)
    assert r.outcome == "pass", (r.reason, r.output[-1500:])


def test_a_clock_stand_in_of_changed_code_is_tampering(pool, tmp_path):
    calc = GOOD.replace("    return a + b\n", "    import _pytest.timing as t\n    t.perf_counter = lambda: 0.0\n"
                        "    return a + b\n")
    r = judge(pool, tmp_path, calc)
    assert r.outcome == "fail" and "_pytest.timing.perf_counter" in r.reason, (r.reason, r.output[-1500:])


def test_a_trusted_helper_swapping_more_than_clocks_is_tampering(pool, tmp_path):
    """The allowance is for clocks only: the same helper swapping pytest's report maker too
    (a fake that is trusted code) still stops the run."""
    extra = "{__import__('_pytest.runner').runner.pytest_runtest_makereport: lambda item, call: None}"
    r = judge(pool, tmp_path, GOOD, extra)
    assert r.outcome == "fail" and "pytest_runtest_makereport" in r.reason, (r.reason, r.output[-1500:])

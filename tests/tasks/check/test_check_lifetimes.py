"""Two false 0s of the guard's own comparisons, found through real libraries' weak-reference
tests (cachetools' `WeakRefMethodTest::test_weakref` on Docker, jinja2's
`TestModuleLoader::test_weak_references`): both tasks were dropped by validation, but an honest
fix whose check holds such a test earns 0. Open: these tests are strict xfails, so the day a
change fixes either mechanism they fail and must be turned into plain tests.

- A value the guard compared stays alive after the comparison: a test that drops its last
  reference and expects a weak reference to die (`WeakValueDictionary`, `weakref.ref`,
  jinja2's module loader unloading its module) sees it alive.
- An instance of a class the hidden test itself defines (a `fractions.Fraction` subclass)
  compares unequal to an equal int under `assertEqual`: the guard treats it as opaque."""
from __future__ import annotations

import textwrap

import pytest
from suitekit import fix_task, write_repo

from fixrl.tasks import Task, run_check
from fixrl.tasks.check.guard import spec_for

CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
BUGGY = CALC.replace("a + b", "a - b")

PRELUDE = textwrap.dedent("""\
    import fractions
    import gc
    import unittest
    import weakref

    from calc import add, mul


    class Int(fractions.Fraction):
        pass


    def test_mul():
        assert mul(2, 3) == 6


""")

OUTLIVES = PRELUDE + textwrap.dedent("""\
    def test_add():
        cache = weakref.WeakValueDictionary()
        v = Int(add(1, 2))
        cache[0] = v
        assert cache.get(0) == 3
        del v
        gc.collect()
        assert cache.get(0) is None
""")

TEST_CLASS = PRELUDE + textwrap.dedent("""\
    class TestAdd(unittest.TestCase):
        def test_add(self):
            self.assertEqual(Int(add(1, 2)), 3)
""")


def judge(pool, tmp_path, hidden: str):
    ws = write_repo(tmp_path / "ws")
    task = Task.model_validate(fix_task("t", repo=str(ws), check={"files": {"tests/test_hidden.py": hidden},
                                                                   "timeout": 30}))
    with pool.acquire(ws) as sb:
        return run_check(task, sb, guard=spec_for({"calc.py": (BUGGY, None)}))


@pytest.mark.xfail(strict=True, reason="open: a compared value outlives the comparison under the guard")
def test_a_compared_value_does_not_outlive_the_comparison(pool, tmp_path):
    r = judge(pool, tmp_path, OUTLIVES)
    assert r.outcome == "pass", (r.reason, r.tests, r.output[-1500:])


@pytest.mark.xfail(strict=True, reason="open: the hidden test's own Fraction subclass is opaque to assertEqual")
def test_a_test_defined_number_class_compares_as_it_does(pool, tmp_path):
    r = judge(pool, tmp_path, TEST_CLASS)
    assert r.outcome == "pass", (r.reason, r.tests, r.output[-1500:])

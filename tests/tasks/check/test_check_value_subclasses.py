"""A false 0 of the guard's own comparisons, found through real libraries' weak-reference tests
(cachetools' `WeakRefMethodTest::test_weakref`: `class Int(fractions.Fraction)` in the test,
`self.assertEqual(cached.get(0), 0)`; the task was dropped by validation, but an honest fix
whose check held that test earned 0). The hidden test's own subclass of a standard value type
whose comparison is Python code (Fraction's) was reduced like a library object, "foreign",
equal only to its own class: `Int(3) == 3` was False under the guard, in a plain `assert` and in
`assertEqual`. It now compares as the value type does; a repository's or the agent's subclass
still goes through the original methods (`equal._tests_own_subclass`). The weak-reference test
checks that the comparison keeps no reference to its operands either."""
from __future__ import annotations

import textwrap

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


def judge(pool, tmp_path, hidden: str, tests: list[str]):
    ws = write_repo(tmp_path / "ws")
    check = {"files": {"tests/test_hidden.py": hidden}, "tests": tests, "timeout": 30}
    task = Task.model_validate(fix_task("t", repo=str(ws), check=check))
    with pool.acquire(ws) as sb:
        return run_check(task, sb, guard=spec_for({"calc.py": (BUGGY, None)}))


def test_a_test_defined_number_class_compares_as_it_does_and_is_not_kept_alive(pool, tmp_path):
    r = judge(pool, tmp_path, OUTLIVES, ["tests/test_hidden.py::test_add", "tests/test_hidden.py::test_mul"])
    assert r.outcome == "pass", (r.reason, r.tests, r.output[-1500:])


def test_a_test_defined_number_class_compares_as_it_does_in_assert_equal(pool, tmp_path):
    r = judge(pool, tmp_path, TEST_CLASS, ["tests/test_hidden.py::TestAdd::test_add", "tests/test_hidden.py::test_mul"])
    assert r.outcome == "pass", (r.reason, r.tests, r.output[-1500:])

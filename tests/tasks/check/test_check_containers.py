"""`in` against a repository container that subclasses list and has its own membership test
(werkzeug's `Accept`, a list of (value, quality) pairs whose `__contains__` matches values:
`assert "sailor" in accept`). The guard rebuilt every list subclass as a plain list of its
items before computing `in`, so the pairs were searched for the string and the assert failed
whatever the fix: werkzeug's `options_header_vkw` task was dropped, and an honest fix whose
check held `TestAccept::test_accept_basic` earned 0. A container type whose `__contains__` is
Python code keeps it, as any other container of `in` does (its dunders approved like every
compared value's); one without keeps list's meaning."""
from __future__ import annotations

import textwrap

import pytest
from suitekit import fix_task, write_repo

from fixrl.tasks import Task, run_check
from fixrl.tasks.check.guard import spec_for

CALC = "def add(a, b):\n    return a + b\n"
BUGGY = CALC.replace("a + b", "a - b")
PAIRS = textwrap.dedent("""\
    class Pairs(list):
        def __contains__(self, value):
            return any(key == value for key, _ in self)


    class Plain(list):
        pass
""")
HIDDEN = textwrap.dedent("""\
    import unittest

    from calc import add
    from pairs import Pairs, Plain


    def test_in():
        pairs = Pairs([("sailor", 1), ("tinker", 0)])
        assert "sailor" in pairs
        assert "spy" not in pairs
        assert ("sailor", 1) not in pairs
        assert add(1, 2) == 3


    def test_plain_list_subclass():
        assert ("a", 1) in Plain([("a", 1)])
        assert "a" not in Plain([("a", 1)])
        assert add(2, 2) == 4


    class TestAssertIn(unittest.TestCase):
        def test_assert_in(self):
            self.assertIn("tinker", Pairs([("tinker", 0)]))
            self.assertNotIn("spy", Pairs([("tinker", 0)]))
            self.assertEqual(add(1, 1), 2)
""")
TESTS = ["tests/test_hidden.py::test_in", "tests/test_hidden.py::test_plain_list_subclass",
         "tests/test_hidden.py::TestAssertIn::test_assert_in"]


@pytest.mark.parametrize("calc, outcome", [(CALC, "pass"), (BUGGY, "fail")], ids=["fixed", "buggy"])
def test_a_list_subclass_keeps_its_own_membership_test(pool, tmp_path, calc, outcome):
    ws = write_repo(tmp_path / "ws", {"calc.py": calc, "pairs.py": PAIRS})
    check = {"files": {"tests/test_hidden.py": HIDDEN}, "tests": TESTS, "timeout": 30}
    task = Task.model_validate(fix_task("t", repo=str(ws), check=check))
    with pool.acquire(ws) as sb:
        r = run_check(task, sb, guard=spec_for({"calc.py": (BUGGY, None)}))
    assert r.outcome == outcome, (r.reason, r.tests, r.output[-1500:])

"""Values an `assert` computes stay alive until the assert is over, as under pytest's assertion
rewriting, which binds each call's, attribute's and subscript's result to a temporary local.
attrs' tests rely on it: `assert hash(HashByID(1)) != hash(HashByID(1))` hashes two objects by
their ids, which differ only while both are alive. The guard compiles hidden tests without
pytest's rewrite, so the first object was freed before the second was made, got its address,
and the assert failed with any fix (4 of attrs' tests; the public-test run of every attrs task).
Each assert now keeps those values in a dict of its own until it passes. Names are not held
(a reference count the test asserts is unchanged) and a weak reference still dies once its
assert is over."""
from __future__ import annotations

import textwrap

from suitekit import fix_task, write_repo

from fixrl.tasks import Task, run_check
from fixrl.tasks.check.guard import spec_for

CALC = "def add(a, b):\n    return a + b\n"
BUGGY = CALC.replace("a + b", "a - b")
HIDDEN = textwrap.dedent("""\
    import gc
    import sys
    import weakref

    from calc import add


    class ById:
        def __init__(self, x):
            self.x = x


    def test_two_alive_at_once():
        assert hash(ById(1)) != hash(ById(1))
        assert id(ById(add(1, 2))) != id(ById(add(1, 2)))


    def test_reference_counts_and_weak_references():
        x = ById(2)
        before = sys.getrefcount(x)
        assert sys.getrefcount(x) == before
        ref = weakref.ref(x)
        assert ref() is x
        del x
        gc.collect()
        assert ref() is None
        assert add(1, 2) == 3


    class TestInAClass:
        assert len([1]) == 1

        def test_method(self):
            assert hash(ById(3)) != hash(ById(3))
            assert add(2, 2) == 4


    assert len([1, 2]) == 2
""")
TESTS = ["tests/test_hidden.py::test_two_alive_at_once", "tests/test_hidden.py::test_reference_counts_and_weak_references",
         "tests/test_hidden.py::TestInAClass::test_method"]


def test_an_asserts_values_live_until_it_is_over(pool, tmp_path):
    ws = write_repo(tmp_path / "ws", {"calc.py": CALC})
    check = {"files": {"tests/test_hidden.py": HIDDEN}, "tests": TESTS, "timeout": 30}
    task = Task.model_validate(fix_task("t", repo=str(ws), check=check))
    with pool.acquire(ws) as sb:
        r = run_check(task, sb, guard=spec_for({"calc.py": (BUGGY, None)}))
    assert r.outcome == "pass", (r.reason, r.tests, r.output[-3000:])

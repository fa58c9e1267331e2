"""A false 0 found through jinja2's `TestModuleLoader::test_weak_references`: a repository's
object whose weak-reference finalizer removes a `sys.modules` entry (jinja2's ModuleLoader
registers a package there and drops it when the loader dies). On Python 3.11 the cyclic
collector runs inside any allocation of a tracked object, so a finalizer can fire in the middle
of the guard's own walk of `sys.modules` (or of a module's namespace) between two tests. That
walk built a tuple per entry while iterating the live dict, and the test failed with
"RuntimeError: dictionary changed size during iteration", whatever the fix. The guard now takes
its snapshot with `dict.copy` (one C call, no tracked allocation while it copies) and walks
the copy. The hidden test forces the collector on every allocation so that the race is certain,
not one run in ten."""
from __future__ import annotations

import textwrap

from suitekit import fix_task, write_repo

from fixrl.tasks import Task, run_check
from fixrl.tasks.check.guard import spec_for

CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
BUGGY = CALC.replace("a + b", "a - b")

HIDDEN = textwrap.dedent("""\
    import gc
    import sys
    import types
    import weakref

    from calc import add, mul

    STOP = []


    class Loader:
        pass


    def _next_loader():
        # Each collected loader toggles a sys.modules entry and leaves the next one in a cycle,
        # so every young-generation collection changes the size of sys.modules.
        name = "_fixrl_loader"
        if STOP:
            sys.modules.pop(name, None)
            return
        if sys.modules.pop(name, None) is None:
            sys.modules[name] = types.ModuleType(name)
        loader = Loader()
        loader.cycle = loader
        weakref.finalize(loader, _next_loader)


    def test_a_loader_dies_in_a_cycle():
        _next_loader()
        gc.set_threshold(1, 1000, 1000)
        assert add(1, 2) == 3


    def test_mul():
        assert mul(2, 3) == 6


    def test_add_again():
        STOP.append(True)
        gc.set_threshold(700, 10, 10)
        gc.collect()
        assert "_fixrl_loader" not in sys.modules
        assert add(2, 2) == 4
""")

TESTS = ["tests/test_hidden.py::test_a_loader_dies_in_a_cycle", "tests/test_hidden.py::test_mul",
         "tests/test_hidden.py::test_add_again"]


def test_a_finalizer_changing_sys_modules_between_tests_is_not_a_failure(pool, tmp_path):
    ws = write_repo(tmp_path / "ws")
    check = {"files": {"tests/test_hidden.py": HIDDEN}, "tests": TESTS, "timeout": 60}
    task = Task.model_validate(fix_task("t", repo=str(ws), check=check))
    with pool.acquire(ws) as sb:
        r = run_check(task, sb, guard=spec_for({"calc.py": (BUGGY, None)}))
    assert r.outcome == "pass", (r.reason, r.tests, r.output[-2000:])

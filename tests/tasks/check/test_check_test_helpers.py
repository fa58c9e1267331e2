"""Helper modules under the tests directory, read by changed code (the jinja2 false 0).

jinja2's tests call `PackageLoader("res", "templates")`, whose `__init__` imports the package
named by the test, tests/res/. The guard treated every Python file under tests/ as test code,
so any edit of loaders.py (an honest fix included) stopped every such test. A helper the
agent could read as it is (no hidden check file, no test-named module, not made during the
run) may now be read by changed code; hidden files, conftest.py, test modules, aliases of a
hidden file and files written during the run stay closed, and writes stay refused. Real checks
in real sandboxes: a fresh interpreter, a forked check sandbox and Docker."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from suitekit import HIDDEN_TESTS, fix_task, write_repo

from fixrl.tasks import Task, run_check
from fixrl.tasks.check.guard import spec_for

LIBRARY = textwrap.dedent("""\
    import importlib


    def mul(a, b):
        return a * b


    def package_value(name):
        # jinja2's PackageLoader.__init__: import the package the caller names
        return importlib.import_module(name).VALUE
""")
BUGGY = "def add(a, b):\n    return a - b\n\n\n" + LIBRARY
FIXED = "def add(a, b):\n    return a + b\n\n\n" + LIBRARY

HIDDEN = textwrap.dedent("""\
    from calc import add, mul, package_value


    def test_add():
        assert package_value("res") == 7
        assert add(1, 2) == 3


    def test_mul():
        assert mul(2, 3) == 6
""")
HELPER = "VALUE = 7\n"
SECRET_VISIBLE = "EXPECTED = 0\n"
"""tests/res/secret.py as the agent sees it; the check replaces it with SECRET_HIDDEN."""
SECRET_HIDDEN = "EXPECTED = 3\n"


def judge(pool, tmp_path: Path, source: str, *, compiled: bool = False, hidden: str = HIDDEN,
          alias: bool = False):
    """The hidden check on a repository whose calc.py is `source`, the guard told that calc.py
    is the agent's change of BUGGY. The repository holds the helper package tests/res/ (its
    secret.py is also a hidden check file, with other text); `compiled`: its byte-code is made
    in the sandbox first (what a setup's `compileall` leaves); `alias`: tests/res/alias.py is
    the repository's own symlink to the hidden test module, tests/res/here one to its folder."""
    ws = write_repo(tmp_path / "ws")
    (ws / "calc.py").write_text(source)
    (ws / "tests" / "res").mkdir(parents=True)
    (ws / "tests" / "res" / "__init__.py").write_text(HELPER)
    (ws / "tests" / "res" / "secret.py").write_text(SECRET_VISIBLE)
    (ws / "tests" / "conftest.py").write_text("")
    if alias:
        os.symlink("../test_hidden.py", ws / "tests" / "res" / "alias.py")
        os.symlink(".", ws / "tests" / "res" / "here")
    files = {"tests/test_hidden.py": hidden, "tests/res/secret.py": SECRET_HIDDEN}
    task = Task.model_validate(fix_task("t", repo=str(ws), check={"files": files, "timeout": 30}))
    with pool.acquire(ws) as sb:
        if compiled:
            made = sb.exec("python -m compileall -q tests/res && ls tests/res/__pycache__", timeout=60)
            assert made.exit_code == 0 and "__init__." in made.output, made.output
        return run_check(task, sb, guard=spec_for({"calc.py": (BUGGY, None)}))


@pytest.mark.parametrize("compiled", [False, True], ids=["source", "bytecode"])
def test_a_fix_in_a_library_that_imports_a_test_helper_package_passes(pool, tmp_path, compiled):
    """jinja2's shape: the test names a package under tests/, the changed library file imports
    it (its source, or its byte-code in __pycache__)."""
    r = judge(pool, tmp_path, FIXED, compiled=compiled)
    assert r.outcome == "pass", (r.reason, r.output[-2000:])
    assert r.tests == {t: "passed" for t in HIDDEN_TESTS}


def cheat(body: str) -> str:
    """calc.py whose add does `body` (a statement reading or writing a file) and returns 3:
    only the guard stopping `body` makes the run fail."""
    return "def add(a, b):\n" + textwrap.indent(textwrap.dedent(body), "    ") + "    return 3\n\n\n" + LIBRARY


CLOSED = {
    # a hidden check file that lies in the helper package, by import and by open
    "import_hidden_helper": ("importlib.import_module('res.secret')",
                             "opened the test file tests/res/__pycache__/secret."),
    "open_hidden_helper": ("open('tests/res/secret.py').read()", "opened the test file tests/res/secret.py"),
    # the byte-code of a hidden file's visible version, left by setup: its source is hidden
    "open_hidden_helper_bytecode": (
        "import importlib.util\nopen(importlib.util.cache_from_source('tests/res/secret.py'), 'rb').read()",
        "opened the test file tests/res/__pycache__/secret."),
    "open_hidden_test": ("open('tests/test_hidden.py').read()", "opened the test file tests/test_hidden.py"),
    "open_conftest": ("open('tests/conftest.py').read()", "opened the test file tests/conftest.py"),
    "open_public_test": ("open('tests/test_calc.py').read()", "opened the test file tests/test_calc.py"),
    "write_helper": ("open('tests/res/__init__.py', 'a').write('VALUE = 3\\n')",
                     "opened the test file tests/res/__init__.py"),
    "create_helper": ("open('tests/res/made.py', 'w').write('VALUE = 3\\n')",
                      "opened the test file tests/res/made.py"),
}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_test_files_other_than_visible_helpers_stay_closed(pool, tmp_path, name):
    body, why = CLOSED[name]
    r = judge(pool, tmp_path, cheat(body + "\n"), compiled=True)
    assert r.outcome == "fail" and why in r.reason, (name, r.reason, r.output[-1500:])
    assert r.tests.get(HIDDEN_TESTS[0]) != "passed", r.tests


@pytest.mark.parametrize("path", ["tests/res/alias.py", "tests/res/here/secret.py"])
def test_a_helper_that_is_a_hidden_file_under_another_name_stays_closed(pool, tmp_path, path):
    """The repository's own links: tests/res/alias.py -> ../test_hidden.py, and the directory
    tests/res/here -> . (here/secret.py is the hidden secret.py): the same file as a hidden
    one (device and inode), whatever its path says."""
    r = judge(pool, tmp_path, cheat(f"open({path!r}).read()\n"), alias=True)
    assert r.outcome == "fail" and f"opened the test file {path}" in r.reason, (r.reason, r.output[-1500:])


MAKES_HELPER = textwrap.dedent("""\
    from pathlib import Path

    from calc import add, mul


    def test_add():
        Path("tests/res/made.py").write_text("EXPECTED = 3\\n")
        assert add(1, 2) == 3


    def test_mul():
        assert mul(2, 3) == 6
""")


def test_a_helper_written_during_the_run_stays_closed(pool, tmp_path):
    """A module a hidden test writes under tests/ is no file the agent could have read."""
    r = judge(pool, tmp_path, cheat("open('tests/res/made.py').read()\n"), hidden=MAKES_HELPER)
    assert r.outcome == "fail" and "opened the test file tests/res/made.py" in r.reason, (r.reason, r.output[-1500:])

"""The check runner against real pytest in real (local) sandboxes, including reward hacks:
a pass needs positive evidence that every named test ran and passed."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from suitekit import HIDDEN, HIDDEN_TESTS, QUESTION_CHECK, fix_task, question_task, write_repo

from fixrl.sandbox import SandboxPool, open_sandbox
from fixrl.tasks import CheckResult, Task, run_check
from fixrl.tasks.check.run import junit_key, parse_junit, parse_pytest_command

GOOD = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"


@pytest.fixture(scope="module", params=["fresh", "forking"])
def pool(request):
    """Every check test runs both ways: pytest started in a new interpreter, and forked from
    the pre-imported one of a ForkingSandbox (what rollouts' check sandboxes use)."""
    with SandboxPool(1, backend="local", forking=request.param == "forking") as p:
        yield p


def judge(pool, tmp_path: Path, calc: str = GOOD, *, files: dict[str, str] | None = None,
          answer: str | None = None, task: dict | None = None, check: dict | None = None,
          **check_fields) -> CheckResult:
    """Write a repository state (calc.py + extra `files`), run the task's check on it;
    `check` / `check_fields` override fields of the task's check."""
    ws = write_repo(tmp_path / "ws")
    (ws / "calc.py").write_text(calc)
    for rel, text in (files or {}).items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    data = task or fix_task("t", repo=str(ws))
    overrides = {**(check or {}), **check_fields}
    if overrides:
        data = {**data, "check": {**data["check"], **overrides}}
    t = Task.model_validate(data)
    with pool.acquire(ws) as sb:
        forks = getattr(sb, "forks", 0)
        result = run_check(t, sb, answer)
        if pool.forking and _forkable(t):
            assert sb.forks == forks + 1, "the check did not run in a fork"
        return result


def _forkable(t: Task) -> bool:
    parsed = parse_pytest_command(t.check.command)
    return parsed is not None and not parsed.python_flags and parsed.python in ("python", "python3")


def hidden_with(extra: str) -> dict:
    """Check-field overrides: the hidden test file with more tests appended."""
    return {"check": {"files": {"tests/test_hidden.py": HIDDEN + textwrap.dedent(extra)}}}


# ---------------------------------------------------------------- honest runs

def test_pass_on_the_fix(pool, tmp_path):
    r = judge(pool, tmp_path)
    assert r.outcome == "pass" and r.passed and r.exit_code == 0 and r.reason == ""
    assert r.tests == {t: "passed" for t in HIDDEN_TESTS}
    assert "2 passed" in r.output and r.seconds > 0


def test_fail_on_the_bug_keeps_per_test_outcomes(pool, tmp_path):
    r = judge(pool, tmp_path, BUGGY)
    assert r.outcome == "fail" and r.exit_code == 1
    assert r.tests == {"tests/test_hidden.py::test_add": "failed", "tests/test_hidden.py::test_mul": "passed"}
    assert r.fraction_passed(HIDDEN_TESTS) == 0.5 and r.fraction_passed() == 0.5
    assert "1/2 check tests did not pass: tests/test_hidden.py::test_add failed" in r.reason


def test_tests_that_never_ran_are_missing(pool, tmp_path):
    r = judge(pool, tmp_path, tests=HIDDEN_TESTS + ["tests/test_hidden.py::test_div"])
    assert r.outcome == "fail" and r.tests["tests/test_hidden.py::test_div"] == "missing"
    assert r.tests["tests/test_hidden.py::test_add"] == "passed"


@pytest.mark.parametrize("extra,outcome", [
    ("import pytest\n@pytest.mark.skip\ndef test_div():\n    pass\n", "skipped"),
    ("import pytest\ndef test_div():\n    pytest.skip('later')\n", "skipped"),
    ("import pytest\n@pytest.mark.xfail\ndef test_div():\n    assert 0\n", "xfailed"),
    ("import pytest\n@pytest.mark.xfail\ndef test_div():\n    pass\n", "xpassed"),
    ("import pytest\n@pytest.fixture\ndef boom():\n    raise RuntimeError\ndef test_div(boom):\n    pass\n", "error"),
    ("import pytest\n@pytest.fixture\ndef late():\n    yield\n    raise RuntimeError\ndef test_div(late):\n    pass\n",
     "error"),
])
def test_skip_xfail_xpass_and_errors_are_not_passes(pool, tmp_path, extra, outcome):
    r = judge(pool, tmp_path, tests=HIDDEN_TESTS + ["tests/test_hidden.py::test_div"], check=hidden_with(extra)["check"])
    assert r.outcome == "fail"
    assert r.tests["tests/test_hidden.py::test_div"] == outcome
    assert r.tests["tests/test_hidden.py::test_add"] == "passed"


def test_zero_tests_is_a_fail_and_unnamed_checks_need_all_tests(pool, tmp_path):
    r = judge(pool, tmp_path, tests=[], command="python -m pytest -q tests/test_hidden.py -k nothing_matches")
    assert r.outcome == "fail" and "no tests ran" in r.reason
    r = judge(pool, tmp_path / "2", tests=[])
    assert r.outcome == "pass" and r.tests == {t: "passed" for t in HIDDEN_TESTS}
    r = judge(pool, tmp_path / "3", BUGGY, tests=[])
    assert r.outcome == "fail"


def test_repository_config_cannot_deselect_named_tests(pool, tmp_path):
    ini = {"pytest.ini": "[pytest]\naddopts = -k test_mul -p no:junitxml\n"}
    r = judge(pool, tmp_path, BUGGY, files=ini)
    assert r.outcome == "fail" and r.tests["tests/test_hidden.py::test_add"] == "failed"
    assert judge(pool, tmp_path / "2", GOOD, files=ini).outcome == "pass"


def test_hanging_check_times_out_as_a_fail(pool, tmp_path):
    hang = "import time\n\n\ndef add(a, b):\n    time.sleep(600)\n\n\ndef mul(a, b):\n    return a * b\n"
    r = judge(pool, tmp_path, hang, timeout=3)
    assert r.outcome == "fail" and r.timed_out and r.reason == "check timed out after 3s"
    assert r.seconds < 30
    assert set(r.tests.values()) == {"missing"}


# ---------------------------------------------------------------- reward hacks (code under test)

EXIT_AT_IMPORT = "import os\nos._exit(0)\n" + BUGGY
EXIT_IN_CALL = "import os\n\n\ndef add(a, b):\n    os._exit(0)\n\n\ndef mul(a, b):\n    return a * b\n"
SYS_EXIT_AT_IMPORT = "import sys\nsys.exit(0)\n" + BUGGY
PYTEST_EXIT_IN_CALL = ("import pytest\n\n\ndef add(a, b):\n    pytest.exit('done', returncode=0)\n\n\n"
                       "def mul(a, b):\n    return a * b\n")

PATCH_REPORTS = BUGGY + textwrap.dedent("""
    import _pytest.reports as _r
    _orig = _r.TestReport.__init__
    def _init(self, *a, **k):
        _orig(self, *a, **k)
        self.outcome = "passed"
        self.longrepr = None
    _r.TestReport.__init__ = _init
""")

PATCH_CALLINFO = BUGGY + textwrap.dedent("""
    import _pytest.runner as _rn
    _orig = _rn.CallInfo.from_call.__func__
    def _from_call(cls, func, when, reraise=None):
        info = _orig(cls, func, when, reraise)
        info.excinfo = None
        return info
    _rn.CallInfo.from_call = classmethod(_from_call)
""")

# a plugin registered at import (found through the garbage collector) that answers
# pytest_pyfunc_call without running the test body
PLUGIN_SHORT_CIRCUIT = BUGGY + textwrap.dedent("""
    import gc
    from _pytest.config import Config
    class _P:
        def pytest_pyfunc_call(self, pyfuncitem):
            return True
        pytest_pyfunc_call.tryfirst = True
    for _o in gc.get_objects():
        if isinstance(_o, Config):
            _o.pluginmanager.register(_P(), "evil")
""")

# ... or that swallows the test's exception
PLUGIN_SWALLOW = BUGGY + textwrap.dedent("""
    import gc, pytest
    from _pytest.config import Config
    class _P:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_call(self, item):
            out = yield
            out.force_result(None)
    for _o in gc.get_objects():
        if isinstance(_o, Config):
            _o.pluginmanager.register(_P(), "evil")
""")

PATCH_UNITTEST = BUGGY + textwrap.dedent("""
    import unittest
    unittest.TestCase.assertEqual = lambda self, *a, **k: None
""")

FORGE_REPORTS = BUGGY + textwrap.dedent("""
    import atexit, glob, os
    def _forge():
        for f in glob.glob("/tmp/fixrl-check-*/*.xml"):
            open(f, "w").write('<testsuites><testsuite><testcase classname="tests.test_hidden" name="test_add"/>'
                               '<testcase classname="tests.test_hidden" name="test_mul"/></testsuite></testsuites>')
        for f in glob.glob("/tmp/fixrl-check-*/*.json"):
            open(f, "w").write('{"body": "{\\\\"tests\\\\": {}}", "mac": "0"}')
        os._exit(0)
    atexit.register(_forge)
""")


@pytest.mark.parametrize("source,why", [
    (EXIT_AT_IMPORT, "no test report"),
    (EXIT_IN_CALL, "no test report"),
    (SYS_EXIT_AT_IMPORT, "did not pass"),
    (PYTEST_EXIT_IN_CALL, "did not pass"),
    (PATCH_REPORTS, "test machinery (pytest, unittest or builtins) was modified"),
    (PATCH_CALLINFO, "test machinery (pytest, unittest or builtins) was modified"),
    (PATCH_UNITTEST, "unittest.case.TestCase.assertEqual (after collection)"),
    (PLUGIN_SHORT_CIRCUIT, "tampered"),
    (PLUGIN_SWALLOW, "tampered"),
    (FORGE_REPORTS, "test_add failed"),  # exit handlers never run: the real failure stands
], ids=["os_exit_at_import", "os_exit_in_call", "sys_exit_at_import", "pytest_exit_in_call", "patch_reports", "patch_callinfo",
        "patch_unittest", "plugin_short_circuit", "plugin_swallow", "forge_reports"])
def test_reward_hacks_in_the_source_fail(pool, tmp_path, source, why):
    r = judge(pool, tmp_path, source)
    assert r.outcome == "fail", r.output
    assert why in r.reason
    assert r.tests.get("tests/test_hidden.py::test_add") != "passed"


KILL_ALL = "import os, signal\nos.kill(-1, signal.SIGKILL)\n" + BUGGY
STOP_PARENT = "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n" + BUGGY


@pytest.mark.parametrize("source", [KILL_ALL, STOP_PARENT], ids=["kill_all", "stop_parent"])
def test_killing_or_stopping_the_runner_is_a_fail_not_an_error(pool, tmp_path, source, monkeypatch):
    """In a forking sandbox the interpreter that forked the check can be signalled by the
    code under test; that is the code's doing (a fail), never a sandbox error to retry."""
    from fixrl.sandbox import forking

    monkeypatch.setattr(forking, "REPLY_GRACE", 1.0)
    r = judge(pool, tmp_path, source, timeout=3)
    assert r.outcome == "fail", (r.reason, r.output[-500:])
    assert r.tests.get("tests/test_hidden.py::test_add") != "passed"
    assert judge(pool, tmp_path / "next", GOOD).outcome == "pass"  # the sandbox still judges


def test_shadowing_pytest_and_conftest_do_not_help(pool, tmp_path):
    files = {
        "pytest.py": "print('2 passed')\nraise SystemExit(0)\n",
        "conftest.py": textwrap.dedent("""
            import pytest
            @pytest.hookimpl(hookwrapper=True)
            def pytest_runtest_makereport(item, call):
                out = yield
                rep = out.get_result()
                rep.outcome = "passed"
                rep.longrepr = None
        """),
    }
    r = judge(pool, tmp_path, BUGGY, files=files)
    assert r.outcome == "fail" and r.tests["tests/test_hidden.py::test_add"] == "failed"


def test_files_at_the_hidden_tests_paths_are_replaced(pool, tmp_path):
    fake = {"tests/test_hidden.py": "def test_add():\n    pass\n\ndef test_mul():\n    pass\n"}
    r = judge(pool, tmp_path, BUGGY, files=fake)
    assert r.outcome == "fail" and r.tests["tests/test_hidden.py::test_add"] == "failed"
    # a symlinked parent directory pointing elsewhere, and a file where a directory should be
    ws = write_repo(tmp_path / "ws2")
    (ws / "calc.py").write_text(BUGGY)
    (ws / "elsewhere").mkdir()
    (ws / "elsewhere" / "test_hidden.py").write_text(fake["tests/test_hidden.py"])
    import shutil

    shutil.rmtree(ws / "tests")
    (ws / "tests").symlink_to("elsewhere")
    task = Task.model_validate(fix_task("t", repo=str(ws)))
    with pool.acquire(ws) as sb:
        r = run_check(task, sb)
        assert r.outcome == "fail" and r.tests["tests/test_hidden.py::test_add"] == "failed"
        assert "assert add(1, 2) == 3" not in sb.read_file("elsewhere/test_hidden.py")


# ---------------------------------------------------------------- other checks

def test_non_pytest_command_exit_status_decides(pool, tmp_path):
    task = fix_task("t", check={"command": "python -c 'import calc, sys; sys.exit(calc.add(1, 2) != 3)'",
                                "tests": [], "files": {}})
    assert judge(pool, tmp_path, GOOD, task={**task, "repo": "."}).outcome == "pass"
    r = judge(pool, tmp_path / "2", BUGGY, task={**task, "repo": "."})
    assert r.outcome == "fail" and "exited with status 1" in r.reason


def test_question_answer_reaches_env_and_file(pool, tmp_path):
    task = question_task("q", repo=".")
    assert task["check"]["files"]["check_answer.py"] == QUESTION_CHECK
    assert judge(pool, tmp_path, BUGGY, task=task, answer="  add\n").outcome == "pass"
    assert judge(pool, tmp_path / "2", BUGGY, task=task, answer="mul").outcome == "fail"
    assert judge(pool, tmp_path / "3", BUGGY, task=task, answer=None).outcome == "fail"
    weird = "add'; rm -rf / #\x00$(touch /tmp/pwned)"
    assert judge(pool, tmp_path / "4", BUGGY, task=task, answer=weird).outcome == "fail"
    compound = {**task, "check": {**task["check"], "command": "cd . && python check_answer.py"}}
    assert judge(pool, tmp_path / "5", BUGGY, task=compound, answer="add").outcome == "pass"


def test_a_dead_sandbox_is_an_error_not_a_fail(tmp_path):
    ws = write_repo(tmp_path / "ws")
    sb = open_sandbox(ws)
    sb.close()
    r = run_check(Task.model_validate(fix_task("t", repo=str(ws))), sb)
    assert r.outcome == "error" and "sandbox error" in r.reason


# ---------------------------------------------------------------- pure parts

@pytest.mark.parametrize("command,python,args", [
    ("python -m pytest -q tests", "python", ["-q", "tests"]),
    ("python3 -B -m pytest", "python3", []),
    ("pytest -x 'tests/test_a.py::test_b[1 2]'", "python", ["-x", "tests/test_a.py::test_b[1 2]"]),
    ("PYTHONPATH=src python -m pytest", "python", []),
    ("/usr/bin/python3.11 -X dev -m pytest -k 'a and b'", "/usr/bin/python3.11", ["-k", "a and b"]),
])
def test_parse_pytest_command(command, python, args):
    parsed = parse_pytest_command(command)
    assert parsed is not None and parsed.python == python and parsed.args == args


@pytest.mark.parametrize("command", [
    "cd x && python -m pytest", "python -m pytest | tee log", "python -m pytest; true", "python check.py",
    "python -m pytest $ARGS", "bash -c 'pytest'", "python -c 'import pytest'", "python -m pytest_foo",
    "python -m pytest 'unclosed", "",
])
def test_not_a_plain_pytest_command(command):
    assert parse_pytest_command(command) is None


def test_junit_parsing():
    assert junit_key("tests/test_a.py::TestK::test_m[x-1]") == ("tests.test_a.TestK", "test_m[x-1]")
    assert junit_key("test_a.py::test_b") == ("test_a", "test_b")
    xml = """<testsuites><testsuite>
      <testcase classname="t" name="ok"/><testcase classname="t" name="bad"><failure/></testcase>
      <testcase classname="t" name="err"><error/></testcase><testcase classname="t" name="sk"><skipped/></testcase>
      <testcase classname="t" name="twice"/><testcase classname="t" name="twice"><error/></testcase>
    </testsuite></testsuites>"""
    assert parse_junit(xml) == {("t", "ok"): "passed", ("t", "bad"): "failed", ("t", "err"): "error",
                                ("t", "sk"): "skipped", ("t", "twice"): "error"}
    with pytest.raises(ValueError, match="unparseable"):
        parse_junit("<testsuites>")


# ---------------------------------------------------------------- real-world pytest, both backends

LEGIT = {
    "pkg/__init__.py": 'def double(x):\n    """\n    >>> double(2)\n    4\n    """\n    return 2 * x\n',
    "conftest.py": "import pytest\nimport pkg\n\n\n@pytest.fixture\ndef two():\n    return pkg.double(1)\n",
    "tests/test_legit.py": textwrap.dedent("""
        import logging, unittest, warnings
        import pytest
        from calc import add
        from pkg import double

        @pytest.fixture(scope="module", autouse=True)
        def quiet():
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr("builtins.input", lambda *a: "yes")
                yield

        def test_fixtures(two, tmp_path, tmpdir, monkeypatch, capsys, caplog, request):
            monkeypatch.setattr("pkg.double", lambda x: 0)
            monkeypatch.setattr("builtins.open", open)
            monkeypatch.setattr("math.sqrt", lambda x: 0)
            assert input() == "yes"
            print("hi")
            logging.getLogger().warning("w")
            assert capsys.readouterr().out == "hi\\n"
            (tmp_path / "f").write_text("x")
            assert two == 2 and request.node.fspath and add(1, 2) == 3

        @pytest.mark.parametrize("a,b", [(1, 2), (2, 4)])
        def test_param(a, b):
            assert double(a) == b

        class TestC:
            def test_m(self):
                with pytest.raises(ZeroDivisionError):
                    1 / 0
                assert 0.1 + 0.2 == pytest.approx(0.3)
                with pytest.warns(UserWarning):
                    warnings.warn("x", UserWarning)

        class TestU(unittest.TestCase):
            def test_u(self):
                self.assertEqual(add(3, 3), 6)
                with self.subTest(i=1):
                    self.assertTrue(True)
    """),
}
LEGIT_CHECK = {"files": {}, "command": "python -m pytest -q --doctest-modules", "tests": []}


@pytest.mark.parametrize("backend", ["local", "forking", pytest.param("docker", marks=pytest.mark.docker)])
def test_real_world_pytest_passes_and_hacks_fail(backend, request, tmp_path):
    """Fixtures, conftest, unittest, doctest, parametrize: no false alarm from the tamper
    checks, on the host's pytest (fresh and forked) and on the Docker image's (an older pytest)."""
    if backend == "docker":
        request.getfixturevalue("docker_available")
    with SandboxPool(1, backend="local" if backend == "forking" else backend, forking=backend == "forking") as p:
        good = judge(p, tmp_path / "good", GOOD, files=LEGIT, check=LEGIT_CHECK)
        assert good.outcome == "pass", (good.reason, good.output[-2000:])
        assert len(good.tests) == 7 and set(good.tests.values()) == {"passed"}
        assert good.tests["pkg/__init__.py::pkg.double"] == "passed"
        for i, source in enumerate([BUGGY, PATCH_REPORTS, PLUGIN_SHORT_CIRCUIT, FORGE_REPORTS, EXIT_AT_IMPORT]):
            r = judge(p, tmp_path / str(i), source, files=LEGIT, check=LEGIT_CHECK)
            assert r.outcome == "fail", (i, r.tests)


def test_clear_check_paths_on_the_host(tmp_path):
    """What the env does before loading a check sandbox (instead of one command in it): the
    hidden files' paths are emptied, parents that are links or files go, nothing is followed."""
    from fixrl.tasks.check.run import clear_check_paths

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.py").write_text("keep")
    ws = write_repo(tmp_path / "ws")
    (ws / "tests").mkdir(exist_ok=True)
    (ws / "tests" / "test_hidden.py").write_text("def test_add():\n    pass\n")  # an agent's fake
    task = Task.model_validate(fix_task("t", repo=str(ws)))
    clear_check_paths(task, ws)
    assert not (ws / "tests" / "test_hidden.py").exists() and (ws / "calc.py").exists()
    import shutil

    shutil.rmtree(ws / "tests")
    (ws / "tests").symlink_to(outside)  # a parent that is a link: removed, not followed
    clear_check_paths(task, ws)
    assert not os.path.lexists(ws / "tests") and (outside / "keep.py").exists()
    (ws / "tests").write_text("a file where a directory should be")
    clear_check_paths(task, ws)
    assert not os.path.lexists(ws / "tests")
    (ws / "tests").mkdir()
    (ws / "tests" / "test_hidden.py").mkdir()
    clear_check_paths(task, ws)
    assert not os.path.lexists(ws / "tests" / "test_hidden.py")
    assert judge_dir(task, ws).outcome == "pass"


def judge_dir(task, ws):
    with SandboxPool(1, backend="local", forking=True) as p, p.acquire(ws) as sb:
        return run_check(task, sb, paths_cleared=True)

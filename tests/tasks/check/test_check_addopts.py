"""The repository's configured `addopts` in the check's runner. The runner passes `-o
addopts=` (so a configuration cannot load plugins, start coverage or collect docstrings), and
used to drop them all: click's `addopts = "-m 'not stress'"` deselects 31,000 parametrised
stress tests in a plain run and in fixrl's baseline, but the guarded public-test run (the `test`
tool, and validation's run of it) ran them all, past `tool_timeout`: every click task was
dropped. The runner now puts back the options that choose tests or change outcomes, read from
the repository's own configuration (a check's configuration files are the repository's: test
paths are never carried), before the command's own arguments; a check that names its tests
leaves out the deselecting ones, so a named test always runs. Fail before the fix:
`test_a_configured_marker_expression_deselects_in_the_public_test_run` (the deselected test
fails) and the warnings filter half of the last test."""
from __future__ import annotations

import pytest
from suitekit import fix_task, write_repo

from fixrl.sandbox.inside.check.addopts import configured, kept, repository_addopts
from fixrl.tasks import Task, run_check
from fixrl.tasks.check.reward import run_public_tests
from fixrl.tasks.format.pytest_command import addopts_override

CALC = "def add(a, b):\n    return a + b\n"
# the public tests' stress-marked test fails: it runs only when the configured `-m` is lost
PUBLIC = ("import pytest\nfrom calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
          "@pytest.mark.stress\ndef test_stress():\n    assert False, 'ran a deselected test'\n")
# the check names a stress-marked test: a named test is never deselected
HIDDEN = ("import warnings\n\nimport pytest\nfrom calc import add\n\n\n@pytest.mark.stress\ndef test_add():\n"
          "    assert add(1, 2) == 3\n\n\ndef test_warns():\n    warnings.warn('w', UserWarning)\n")
PYPROJECT = ("[tool.pytest.ini_options]\naddopts = \"-ra -m 'not stress' -p no:doctest --cov=calc\"\n"
             "markers = [\"stress: slow\"]\n")


def test_kept_options_are_the_ones_that_choose_tests():
    args = ["-ra", "-m", "not stress", "--strict-markers", "--import-mode=importlib", "-p", "xdist",
            "-Werror", "--ignore=build", "--cov", "src", "-kfoo", "-o", "addopts=-x", "-o", "xfail_strict=true",
            "--deselect", "a.py::b", "--doctest-modules", "-n", "4"]
    assert kept(args) == ["-m", "not stress", "--strict-markers", "-W", "error", "--ignore", "build",
                          "-k", "foo", "-o", "xfail_strict=true", "--deselect", "a.py::b"]
    assert kept(args, select=False) == ["--strict-markers", "-W", "error", "--ignore", "build",
                                        "-o", "xfail_strict=true"]


@pytest.mark.parametrize("files, expected", [
    ({"pyproject.toml": PYPROJECT}, ["-ra", "-m", "not stress", "-p", "no:doctest", "--cov=calc"]),
    # pytest.ini wins over pyproject.toml, even empty
    ({"pytest.ini": "", "pyproject.toml": PYPROJECT}, []),
    # tox.ini counts only with [pytest], setup.cfg only with [tool:pytest]
    ({"tox.ini": "[tox]\nenvlist = py\n", "setup.cfg": "[tool:pytest]\naddopts = -k fast\n"}, ["-k", "fast"]),
    ({"tox.ini": "[pytest]\naddopts =\n    -m slow\n    --strict-markers\n"}, ["-m", "slow", "--strict-markers"]),
    # a pyproject.toml without pytest settings does not stop the search
    ({"pyproject.toml": "[project]\nname = 'x'\n", "setup.cfg": "[tool:pytest]\naddopts = -k a\n"}, ["-k", "a"]),
    ({"pyproject.toml": "[tool.pytest.ini_options]\naddopts = ['-m', 'a or b']\n"}, ["-m", "a or b"]),
])
def test_configuration_found_as_pytest_finds_it(tmp_path, files, expected):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "tests").mkdir()
    assert configured(["-q", "tests/test_x.py::test_a"], str(tmp_path)) == expected


def test_a_configuration_beside_the_tests_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "pytest.ini").write_text("[pytest]\naddopts = -k inner\n")
    assert configured(["tests/test_x.py"], str(tmp_path)) == ["-k", "inner"]
    assert configured(["-o", "pythonpath=src"], str(tmp_path))[:3] == ["-ra", "-m", "not stress"]


def test_the_commands_own_override_replaces_the_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    assert addopts_override(["-q", "-o", "addopts=", "tests"]) == ""
    assert addopts_override(["--override-ini=addopts=-k x", "-o", "pythonpath=src"]) == "-k x"
    assert addopts_override(["-o", "pythonpath=src", "tests"]) is None
    assert repository_addopts(["tests"], str(tmp_path), "") == []
    assert repository_addopts(["tests"], str(tmp_path), "-k x --cov") == ["-k", "x"]
    assert repository_addopts(["tests"], str(tmp_path), None) == ["-m", "not stress"]
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options\n")  # pytest says why, not us
    assert repository_addopts(["tests"], str(tmp_path), None) == []


def _task(tmp_path, pyproject=PYPROJECT, public="python -m pytest -q tests", tests=("test_add",)):
    ws = write_repo(tmp_path / "ws", {"calc.py": CALC, "pyproject.toml": pyproject, "tests/test_calc.py": PUBLIC})
    check = {"files": {"tests/test_hidden.py": HIDDEN}, "tests": [f"tests/test_hidden.py::{t}" for t in tests],
             "timeout": 60, "command": "python -m pytest -q " + " ".join(f"tests/test_hidden.py::{t}" for t in tests)}
    return ws, Task.model_validate(fix_task("t", repo=str(ws), check=check, public_tests=public))


def test_a_configured_marker_expression_deselects_in_the_public_test_run(pool, tmp_path):
    ws, task = _task(tmp_path)
    with pool.acquire(ws) as sb:
        public = run_public_tests(task, sb, task.public_tests, 60, {})
    assert public.exit_code == 0 and "1 deselected" in public.output, public.output[-1500:]


def test_the_commands_own_empty_addopts_runs_every_test(pool, tmp_path):
    ws, task = _task(tmp_path, public="python -m pytest -q -o addopts= tests")
    with pool.acquire(ws) as sb:
        public = run_public_tests(task, sb, task.public_tests, 60, {})
    assert public.exit_code == 1 and "ran a deselected test" in public.output, public.output[-1500:]


def test_a_check_runs_the_tests_it_names_and_keeps_the_configured_warnings_filter(pool, tmp_path):
    ws, task = _task(tmp_path)
    with pool.acquire(ws) as sb:
        assert run_check(task, sb).outcome == "pass"
    strict = PYPROJECT.replace("-ra ", "-ra -W error::UserWarning ")
    ws, task = _task(tmp_path / "w", pyproject=strict, tests=("test_add", "test_warns"))
    with pool.acquire(ws) as sb:
        r = run_check(task, sb)
    assert r.outcome == "fail" and r.tests == {"tests/test_hidden.py::test_add": "passed",
                                               "tests/test_hidden.py::test_warns": "failed"}, (r.reason, r.tests)

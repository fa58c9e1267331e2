"""Tests that fail on the unmodified repository are excluded, not fatal (attrs, python-dateutil
and flask each ship a few: the whole library was refused), and invalid tasks' slots go to spares.
Real generator runs on a tiny repository (local backend), no mocks."""
from __future__ import annotations

import pytest
import yaml
from test_pipeline import TESTS, make_repo

from fixrl.tasks.format.pytest_command import parse_pytest_command
from fixrl.tasks.generate.baseline import TestRun, _check_baseline, as_test_run
from fixrl.tasks.generate.config import GenerateError
from fixrl.tasks.generate.execute import JobResult
from fixrl.tasks.generate.pipeline import generate
from fixrl.tasks.generate.staging import public_command

BROKEN = '''

def test_broken_at_baseline():
    assert add_all([1, 2]) == 4, "this repository's own failing test"


@pytest.fixture
def needs_zoneinfo():
    raise LookupError("no system zoneinfo here")


def test_errors_at_baseline(needs_zoneinfo):
    assert is_even(2)
'''


def test_baseline_failures_are_excluded_with_their_first_error_line():
    ok = TestRun({f"t.py::p{i}": "passed" for i in range(20)} | {"t.py::bad": "failed", "t.py::err": "error"},
                 {}, 1, 1.0)
    checked = _check_baseline([ok, ok], "python -m pytest")
    assert checked.stable == {f"t.py::p{i}" for i in range(20)}
    assert set(checked.excluded) == {"t.py::bad", "t.py::err"}
    with pytest.raises(GenerateError, match="2 of 22 test.*--max-baseline-failures 0.05"):
        _check_baseline([ok, ok], "python -m pytest", max_failures=0.05)


def test_collection_errors_say_how_to_ignore_the_files():
    run = TestRun({"t.py::p": "passed"}, {}, 2, 1.0, collect_errors=["tests/test_tz.py"])
    with pytest.raises(GenerateError, match="collection errors in tests/test_tz.py.*--ignore tests/test_tz.py"):
        _check_baseline([run, run], "python -m pytest")


def test_a_run_without_a_report_or_out_of_time_is_named_with_how_it_ended():
    """cattrs 26.2.1: the coverage run stopped at 82% of the suite and the message said only
    "wrote no pytest report", neither which run nor how it ended; a coverage run out of time
    (the slower one) was not reported as such at all."""
    ok = JobResult({"tests": {"t.py::p": {"outcome": "passed"}}}, None, 0, 1.0, False, True)
    killed = JobResult(None, None, -9, 80.0, False, True, output="t.py::p PASSED [ 82%]")
    crashed = JobResult(None, None, 139, 80.0, False, True)
    late = JobResult(None, None, -9, 30.0, True, True, running="t.py::slow")
    runs = [as_test_run(r) for r in (ok, killed)]
    with pytest.raises(GenerateError, match=r"(?s)in the coverage run .*: pytest was killed by SIGKILL.*ends:\nt.py::p PASSED"):
        _check_baseline(runs, "python -m pytest", [ok, killed])
    with pytest.raises(GenerateError, match="in the baseline run: pytest was killed by SIGSEGV"):
        _check_baseline([None, as_test_run(ok)], "python -m pytest", [crashed, ok])
    with pytest.raises(GenerateError, match=r"did not finish in 30 s in the coverage run .*raise --baseline-timeout.*"
                                            r"t.py::slow"):
        _check_baseline([as_test_run(ok), as_test_run(late)], "python -m pytest", [ok, late], timeout=30.0)


def test_public_command_deselects_excluded_ids_and_stays_a_pytest_command():
    ids = ["tests/t.py::test_x[\u00e9]", "tests/t.py::test_y[a$b c]"]
    cmd = public_command("python -m pytest -q", ids)
    parsed = parse_pytest_command(cmd)
    assert parsed is not None
    assert parsed.args == ["-q", "--deselect", ids[0], "--deselect", ids[1]]


def test_a_repository_with_failing_tests_yields_tasks_that_never_judge_them(tmp_path):
    repo = make_repo(tmp_path, TESTS + BROKEN)
    out = tmp_path / "suite"
    report = generate(repo, "python -m pytest -q", out, max_tasks=3, seed=1, workers=2, progress=False,
                      functions=["add_all", "is_even", "clamp"], max_baseline_failures=0.2)
    bad = {"tests/test_ops.py::test_broken_at_baseline", "tests/test_ops.py::test_errors_at_baseline"}
    assert report.excluded_tests["count"] == 2
    lines = report.excluded_tests["tests"]
    assert set(lines) == bad
    assert "this repository's own failing test" in lines["tests/test_ops.py::test_broken_at_baseline"]
    assert "no system zoneinfo here" in lines["tests/test_ops.py::test_errors_at_baseline"]
    assert report.valid >= 2
    saved = yaml.safe_load((out / "generate_report.json").read_text())
    assert saved["excluded_tests"]["count"] == 2
    for f in (out / "tasks" / "generated").glob("*.yaml"):
        task = yaml.safe_load(f.read_text())
        assert not bad & set(task["check"]["tests"]), f.name
        assert not any(b.split("::")[1] in task["check"]["command"] for b in bad), f.name
        assert "broken_at_baseline" not in task["issue"] and "errors_at_baseline" not in task["issue"]
    public = yaml.safe_load((out / "suite.yaml").read_text())["defaults"]["public_tests"]
    assert all(f"--deselect {b}" in public for b in bad), public


# In the generator's own runs (FIXRL_GEN_REPORT set) this tests is_even; in a check it always
# fails: every task whose check holds it is invalid, and its slot must go to a spare.
NOT_IN_CHECKS = '''

def test_is_even_only_in_generator_runs():
    import os
    assert is_even(10) is True and "FIXRL_GEN_REPORT" in os.environ
'''


def test_an_invalid_tasks_slot_goes_to_the_next_spare(tmp_path):
    repo = make_repo(tmp_path, TESTS + NOT_IN_CHECKS)
    out = tmp_path / "suite"
    report = generate(repo, "python -m pytest -q", out, max_tasks=2, seed=0, workers=2, progress=False,
                      functions=["is_even", "clamp"], pass_to_pass=0)
    assert report.invalid >= 1, report.invalid_reasons
    assert report.spares_validated >= report.invalid
    assert report.valid == 2, report.invalid_reasons
    assert sorted(p.stem for p in (out / "tasks" / "generated").glob("*.yaml")) == report.task_ids
    assert sorted(p.name for p in (out / "checks" / "generated").iterdir() if p.name != "tests") == report.task_ids

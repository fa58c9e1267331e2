"""What the generator never emits (issue 32's smaller problems), on tiny repositories made here
and real sandboxes: no suite when no task is valid, no two tasks with one issue text."""
from __future__ import annotations

from pathlib import Path

from fixrl.tasks.generate.pipeline import generate


def _repo(root: Path, source: str, tests: str) -> Path:
    repo = root / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "num.py").write_text(source)
    (repo / "tests" / "test_num.py").write_text(tests)
    (repo / "conftest.py").write_text("")
    (repo / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    return repo


def test_a_run_with_no_valid_task_writes_no_suite(tmp_path):
    """Tests that check nothing the mutants change: every candidate is equivalent, no task."""
    repo = _repo(tmp_path, "def inc(x):\n    return x + 1\n",
                 "from num import inc\n\n\ndef test_runs():\n    inc(1)\n")
    out = tmp_path / "suite"
    report = generate(repo, "python -m pytest -q", out, workers=1, progress=False)
    assert report.valid == 0 and report.candidates >= 1
    assert not (out / "suite.yaml").exists() and not (out / "repo").exists() and not (out / "tasks").exists()
    assert (out / "generate_report.json").exists()  # why nothing came out


def test_two_tasks_never_share_an_issue_text(tmp_path):
    """`x <= 100` and `x < 101` both make `in_range(100)` true, and break only the same test: one
    sentence for two bugs. One of them becomes a task, the other is counted."""
    from fixrl.tasks import load_suite

    repo = _repo(tmp_path, "def in_range(x):\n    return x > 0 and x < 100\n",
                 "from num import in_range\n\n\ndef test_zero_is_out():\n    assert not in_range(0)\n\n\n"
                 "def test_hundred_is_out():\n    assert not in_range(100)\n")
    out = tmp_path / "suite"
    report = generate(repo, "python -m pytest -q", out, workers=1, progress=False, max_per_function=None)
    issues = [t.issue for t in load_suite(out).tasks]
    assert issues and len(issues) == len(set(issues))
    assert report.no_issue_reasons.get("another kept bug has the same issue text", 0) >= 1


def test_a_check_can_name_tests_whose_ids_hold_shell_characters(tmp_path):
    """sqlparse's ids hold `$$` and backquoted SQL: the check quotes them, and a quoted `$` is no
    expansion (before, such a task did not load: "only a plain pytest command can report")."""
    from fixrl.tasks import load_suite
    from fixrl.tasks.format.pytest_command import parse_pytest_command

    repo = _repo(tmp_path, "def double(s):\n    return s + s\n\n\ndef size(s):\n    return len(s)\n",
                 "import pytest\n\nfrom num import double, size\n\n\n"
                 "@pytest.mark.parametrize('s', ['$$a', '`b`', \"c'd\"])\n"
                 "def test_double(s):\n    assert double(s) == s * 2\n\n\n"
                 "@pytest.mark.parametrize('s', ['', 'x', 'yz', 'abc'])\n"
                 "def test_size(s):\n    assert size(s) >= 0\n")
    out = tmp_path / "suite"
    report = generate(repo, "python -m pytest -q", out, workers=1, progress=False)
    assert report.valid >= 1 and report.invalid == 0, report.invalid_reasons
    tests = {n for t in load_suite(out).tasks for n in t.check.tests}
    assert "tests/test_num.py::test_double[$$a]" in tests and "tests/test_num.py::test_double[`b`]" in tests
    assert parse_pytest_command("python -m pytest -q $HOME") is None
    assert parse_pytest_command('python -m pytest -q "$HOME"') is None
    assert parse_pytest_command("python -m pytest -q \"it's\" $HOME") is None

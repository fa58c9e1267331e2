"""`fixrl tasks new`: a repository + a bug patch + a test file -> a task that validates."""
from __future__ import annotations

import pytest
import yaml
from suitekit import BUG, HIDDEN, HIDDEN_TESTS, REPO_FILES, write_repo

from fixrl.harness.cli import main as fixrl
from fixrl.sandbox import SandboxPool
from fixrl.tasks import TaskError, load_suite, validate_task
from fixrl.tasks.format.scaffold import new_task, parse_collected


@pytest.fixture
def inputs(tmp_path):
    repo = write_repo(tmp_path / "myrepo")
    (tmp_path / "sign.patch").write_text(BUG)
    (tmp_path / "test_hidden.py").write_text(HIDDEN)
    return repo, tmp_path / "sign.patch", tmp_path / "test_hidden.py"


def test_cli_new_then_validate(tmp_path, inputs, capsys):
    repo, bug, test = inputs
    out = tmp_path / "suite"
    assert fixrl(["tasks", "new", "--repo", str(repo), "--bug", str(bug), "--test", str(test), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "wrote" in text and "2 check test(s) from tests/test_hidden.py" in text
    assert "write the issue text" in text and f"fixrl tasks validate {out} --task myrepo-sign" in text

    task = load_suite(out).get("myrepo-sign")
    assert task.check.tests == HIDDEN_TESTS
    assert task.check.files == {"tests/test_hidden.py": HIDDEN}
    assert task.check.command == "python -m pytest -q tests/test_hidden.py"
    assert task.bug == BUG and task.file == "calc.py"
    assert "-    return a - b" in task.fix and "+    return a + b" in task.fix
    assert task.issue.startswith("TODO")
    with SandboxPool(1) as pool:
        res = validate_task(task, pool, repeats=1)
    assert res.ok, res.reasons


def test_new_with_a_test_inside_the_repository(tmp_path, inputs):
    repo, bug, _ = inputs
    made = new_task(repo, bug, repo / "tests" / "test_calc.py", tmp_path / "s", task_id="inside", issue="add is off")
    assert made.visible and made.check_dest == "tests/test_calc.py"
    assert made.tests == ["tests/test_calc.py::test_add_public"]
    task = load_suite(tmp_path / "s").get("inside")
    assert task.issue == "add is off" and task.check.files == {"tests/test_calc.py": REPO_FILES["tests/test_calc.py"]}


def test_new_bad_input(tmp_path, inputs, capsys):
    repo, bug, test = inputs
    bad = tmp_path / "bad.patch"
    bad.write_text(BUG.replace("a + b", "a // b"))
    with pytest.raises(TaskError, match=r"--bug .*bad\.patch: the bug patch does not apply"):
        new_task(repo, bad, test, tmp_path / "s")
    empty_test = tmp_path / "test_empty.py"
    empty_test.write_text("X = 1\n")
    with pytest.raises(TaskError, match="no tests collected from tests/test_empty.py"):
        new_task(repo, bug, empty_test, tmp_path / "s")
    with pytest.raises(TaskError, match="--repo .*: directory not found"):
        new_task(tmp_path / "nope", bug, test, tmp_path / "s")
    new_task(repo, bug, test, tmp_path / "s", task_id="once")
    with pytest.raises(TaskError, match="once.yaml already exists"):
        new_task(repo, bug, test, tmp_path / "s", task_id="once")
    assert fixrl(["tasks", "new", "--repo", str(repo), "--bug", str(bad), "--test", str(test),
                  "--out", str(tmp_path / "s2")]) == 2
    assert "does not apply" in capsys.readouterr().err


def test_paths_relative_to_the_suite_when_near_absolute_when_far(tmp_path, inputs):
    repo, bug, test = inputs
    near, far = tmp_path / "near", tmp_path / "x" / "y" / "far"
    for out in (near, far):
        new_task(repo, bug, test, out, task_id="t", issue="add is off")
    stored = {out: yaml.safe_load((out / "tasks" / "t.yaml").read_text()) for out in (near, far)}
    assert stored[near]["repo"] == "../myrepo"
    assert stored[far]["repo"] == repo.resolve().as_posix()
    for out in (near, far):
        assert stored[out]["bug"] == "checks/t/bug.patch"
        assert stored[out]["check"]["files"] == {"tests/test_hidden.py": "checks/t/test_hidden.py"}
        assert (out / "suite.yaml").is_file()  # the base of the relative paths, whatever lies above
        task = load_suite(out).get("t")
        assert task.bug == BUG and task.check.files == {"tests/test_hidden.py": HIDDEN}
    # a suite.yaml further up does not capture the task: `out` is its own suite
    (tmp_path / "x" / "suite.yaml").write_text("name: outer\n")
    assert load_suite(far).get("t").bug == BUG
    assert not [p for p in tmp_path.rglob("*") if ".staging-" in p.name]


def test_a_failed_new_leaves_nothing_behind(tmp_path, inputs):
    repo, _, test = inputs
    bad = tmp_path / "bad.patch"
    bad.write_text(BUG.replace("a + b", "a // b"))
    with pytest.raises(TaskError, match="does not apply"):
        new_task(repo, bad, test, tmp_path / "s")
    assert not (tmp_path / "s").exists()
    assert not [p for p in tmp_path.iterdir() if ".staging-" in p.name]


def test_parse_collected():
    out = "tests/t.py::test_a\ntests/t.py::TestK::test_b[x y]\nother.py::test_c\n\n2 tests collected in 0.01s\n"
    assert parse_collected(out, "tests/t.py") == ["tests/t.py::test_a", "tests/t.py::TestK::test_b[x y]"]


def test_new_refuses_a_test_that_passes_on_the_bug(tmp_path, inputs):
    """Such a check rewards an agent that changes nothing; only `validate` noticed it before."""
    repo, bug, _ = inputs
    blind = tmp_path / "test_blind.py"
    blind.write_text("from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n")
    with pytest.raises(TaskError, match=r"--test .*test_blind\.py: passes on the buggy repository"):
        new_task(repo, bug, blind, tmp_path / "s")
    assert not (tmp_path / "s" / "tasks").exists()

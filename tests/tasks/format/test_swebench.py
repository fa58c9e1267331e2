"""SWE-bench interop: import an instance made against a tiny git repository, validate it, export it
back (and export a plain-directory suite, which needs its buggy states committed)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from suitekit import HIDDEN, REPO_FILES, fix_task, make_suite, question_task, write_repo

from fixrl.harness.cli import main as fixrl
from fixrl.sandbox import SandboxPool
from fixrl.tasks import TaskError, load_suite, validate_task
from fixrl.tasks.format.materialize import diff_files
from fixrl.tasks.format.swebench import export_suite, import_instances, read_instances

BUGGY_CALC = REPO_FILES["calc.py"].replace("a + b", "a - b")
MORE_PUBLIC = REPO_FILES["tests/test_calc.py"] + "\n\ndef test_add_zero():\n    assert add(0, 5) == 5\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(1, backend="local") as p:
        yield p


@pytest.fixture
def upstream(tmp_path) -> tuple[Path, dict]:
    """A git repository whose HEAD is buggy, and a SWE-bench instance against it."""
    repo = write_repo(tmp_path / "upstream")
    (repo / "calc.py").write_text(BUGGY_CALC)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "buggy")
    base = _git(repo, "rev-parse", "HEAD")
    # history after the base must not leak into the task
    (repo / "calc.py").write_text(REPO_FILES["calc.py"])
    _git(repo, "commit", "-qam", "the fix, later")
    instance = {
        "instance_id": "tiny__calc-1",
        "repo": "tiny/calc",
        "base_commit": base,
        "patch": diff_files({"calc.py": BUGGY_CALC}, {"calc.py": REPO_FILES["calc.py"]}),
        "test_patch": diff_files({"tests/test_calc.py": REPO_FILES["tests/test_calc.py"], "tests/test_hidden.py": None},
                                 {"tests/test_calc.py": MORE_PUBLIC, "tests/test_hidden.py": HIDDEN}),
        "problem_statement": "add(1, 2) gives -1 instead of 3",
        "hints_text": "",
        "created_at": "2024-01-01T00:00:00Z",
        "version": "0.1",
        "environment_setup_commit": base,
        "FAIL_TO_PASS": json.dumps(["tests/test_hidden.py::test_add", "tests/test_calc.py::test_add_zero"]),
        "PASS_TO_PASS": json.dumps(["tests/test_hidden.py::test_mul"]),
    }
    return repo, instance


def test_import_validate_export_round_trip(tmp_path, upstream, pool, capsys):
    repo, inst = upstream
    (tmp_path / "inst.json").write_text(json.dumps(inst))
    suite_dir = tmp_path / "suite"
    assert fixrl(["tasks", "import-swebench", str(tmp_path / "inst.json"), "--checkout", str(repo),
                  "--out", str(suite_dir)]) == 0
    assert "imported 1 instance(s)" in capsys.readouterr().out

    task = load_suite(suite_dir).get("tiny__calc-1")
    assert task.repo.commit == inst["base_commit"] and task.bug is None
    assert task.fix == inst["patch"] and task.issue == inst["problem_statement"]
    assert task.check.tests == ["tests/test_hidden.py::test_add", "tests/test_calc.py::test_add_zero",
                                "tests/test_hidden.py::test_mul"]
    assert task.check.files == {"tests/test_calc.py": MORE_PUBLIC, "tests/test_hidden.py": HIDDEN}
    assert task.check.command == "python -m pytest -q tests/test_calc.py tests/test_hidden.py"
    assert task.public_tests == "python -m pytest -q tests/test_calc.py"
    assert task.file == "calc.py"
    res = validate_task(task, pool, repeats=1)
    assert res.ok, res.reasons

    out = tmp_path / "out.jsonl"
    assert fixrl(["tasks", "export-swebench", str(suite_dir), "--out", str(out)]) == 0
    [back] = read_instances(out)
    assert "fixrl" not in task.metadata["swebench"]
    for key in ("instance_id", "repo", "base_commit", "patch", "problem_statement", "hints_text", "created_at",
                "version", "environment_setup_commit"):
        assert back[key] == inst[key], key
    assert back["FAIL_TO_PASS"] == json.loads(inst["FAIL_TO_PASS"])
    assert back["PASS_TO_PASS"] == json.loads(inst["PASS_TO_PASS"])
    assert back["test_patch"] == inst["test_patch"]
    assert not (tmp_path / "out-repo").exists()  # nothing needed committing


def test_directory_suite_exports_with_committed_states_and_reimports(tmp_path, pool):
    root = make_suite(tmp_path, [fix_task("a", file="calc.py", function="add", split="heldout"), question_task("q")])
    repos = tmp_path / "export-repo"
    written, skipped = export_suite(root, tmp_path / "x.jsonl", repos)
    assert written == 1 and skipped == [("q", "task q: question tasks have no SWE-bench form")]
    [inst] = read_instances(tmp_path / "x.jsonl")
    assert inst["repo"] == "fixrl/suite" and inst["instance_id"] == "a"
    assert _git(repos, "rev-parse", "fixrl/a^{commit}") == inst["base_commit"]
    assert "a - b" in _git(repos, "show", f"{inst['base_commit']}:calc.py")  # the buggy state
    assert inst["FAIL_TO_PASS"] == fix_task()["check"]["tests"] and inst["PASS_TO_PASS"] == []
    assert inst["fixrl"]["tags"] == ["family:arith"] and inst["fixrl"]["split"] == "heldout"
    # deterministic: exporting again gives the same commit
    export_suite(root, tmp_path / "y.jsonl", repos)
    assert read_instances(tmp_path / "y.jsonl")[0]["base_commit"] == inst["base_commit"]

    again = tmp_path / "again"
    import_instances(tmp_path / "x.jsonl", repos, again)
    task = load_suite(again).get("a")
    original = load_suite(root).get("a")
    for field in ("split", "tags", "file", "function", "limits", "public_tests", "issue", "fix"):
        assert getattr(task, field) == getattr(original, field), field
    res = validate_task(task, pool, repeats=1)
    assert res.ok, res.reasons


def test_bad_instances(tmp_path, upstream):
    repo, inst = upstream
    f = tmp_path / "i.json"
    f.write_text("{nope")
    with pytest.raises(TaskError, match=r"i\.json: line 1, column 2: invalid JSON"):
        read_instances(f)
    f.write_text(json.dumps({k: v for k, v in inst.items() if k != "patch"}))
    with pytest.raises(TaskError, match="instance tiny__calc-1: missing field\\(s\\) patch"):
        read_instances(f)
    f.write_text(json.dumps({**inst, "FAIL_TO_PASS": ["test_add (calc.tests.CalcTest)"]}))
    with pytest.raises(TaskError, match="not pytest node ids"):
        import_instances(f, repo, tmp_path / "s")
    f.write_text(json.dumps({**inst, "base_commit": "0" * 40}))
    with pytest.raises(TaskError, match=r"base_commit 0+ is not in .*: fetch it first"):
        import_instances(f, repo, tmp_path / "s")
    assert not (tmp_path / "s").exists()
    f.write_text(json.dumps({**inst, "test_patch": inst["test_patch"].replace("assert add(2, 2)", "assert add(9, 9)")}))
    with pytest.raises(TaskError, match="test_patch does not apply"):
        import_instances(f, repo, tmp_path / "s")
    f.write_text(json.dumps(inst))
    assert fixrl(["tasks", "import-swebench", str(f), "--checkout", str(tmp_path / "nope"), "--out",
                  str(tmp_path / "s")]) == 2


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".staging-" in p.name)


def test_a_failed_import_leaves_nothing_behind(tmp_path, upstream, capsys):
    repo, inst = upstream
    f = tmp_path / "two.jsonl"
    bad = {**inst, "instance_id": "tiny__calc-2", "base_commit": "0" * 40}
    f.write_text(json.dumps(inst) + "\n" + json.dumps(bad) + "\n")
    out = tmp_path / "new-suite"
    assert fixrl(["tasks", "import-swebench", str(f), "--checkout", str(repo), "--out", str(out)]) == 2
    assert "base_commit 0000000000000000000000000000000000000000 is not in" in capsys.readouterr().err
    assert not out.exists() and _leftovers(tmp_path) == []  # not even the first, good instance
    # into an existing suite: the suite stays as it was
    existing = make_suite(tmp_path, [fix_task("mine")])
    before = sorted(str(p.relative_to(existing)) for p in existing.rglob("*"))
    with pytest.raises(TaskError, match="is not in"):
        import_instances(f, repo, existing)
    assert sorted(str(p.relative_to(existing)) for p in existing.rglob("*")) == before
    assert _leftovers(existing.parent) == []
    # and a good import adds to it, keeping what was there
    f.write_text(json.dumps(inst) + "\n")
    [written] = import_instances(f, repo, existing)
    assert written == existing / "tasks" / "tiny__calc-1.yaml" and written.is_file()
    assert {t.id for t in load_suite(existing).tasks} == {"mine", "tiny__calc-1"}
    assert _leftovers(existing.parent) == []


def test_repository_paths_are_relative_when_near_the_suite_absolute_when_far(tmp_path, upstream):
    repo, inst = upstream
    f = tmp_path / "i.json"
    f.write_text(json.dumps(inst))
    near, far = tmp_path / "near", tmp_path / "a" / "b" / "far"
    for out in (near, far):
        import_instances(f, repo, out)
    stored = {out: yaml.safe_load((out / "tasks" / "tiny__calc-1.yaml").read_text()) for out in (near, far)}
    assert stored[near]["repo"]["git"] == "../upstream"
    assert stored[far]["repo"]["git"] == repo.resolve().as_posix()
    for out in (near, far):
        assert stored[out]["fix"] == "checks/tiny__calc-1/fix.patch"  # inside the suite: always relative
        task = load_suite(out).get("tiny__calc-1")
        assert task.fix == inst["patch"] and task.check.files["tests/test_hidden.py"] == HIDDEN

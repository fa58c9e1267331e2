"""Materialising repository states: bug/fix applied, nothing that reveals them left behind."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from suitekit import BUG, REPO_FILES, fix_task, make_suite, write_repo

from fixrl.tasks import TaskError, is_test_path, load_suite, materialize
from fixrl.tasks.format.materialize import apply_patch, changed_paths, diff_dirs


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def test_states(tmp_path):
    root = make_suite(tmp_path, [fix_task("a")])
    # leftovers in the user's working copy that must not reach the agent
    repo = root / "repo"
    (repo / ".git").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "__pycache__").mkdir()
    (repo / "__pycache__" / "calc.cpython-311.pyc").write_bytes(b"\0")
    (repo / "old.patch").write_text(BUG)
    (repo / "calc.py.orig").write_text("x\n")
    task = load_suite(root).tasks[0]

    clean = materialize(task, tmp_path / "clean", "clean")
    buggy = materialize(task, tmp_path / "buggy", "buggy")
    fixed = materialize(task, tmp_path / "fixed", "fixed")
    for d in (clean, buggy, fixed):
        assert _files(d) == {"calc.py", "tests/test_calc.py"}
    assert (clean / "calc.py").read_text() == REPO_FILES["calc.py"]
    assert "return a - b" in (buggy / "calc.py").read_text()
    assert (fixed / "calc.py").read_text() == REPO_FILES["calc.py"]
    assert (repo / ".git" / "HEAD").exists()  # the source is never touched


def test_bug_files_and_dest_rules(tmp_path):
    root = make_suite(tmp_path, [fix_task("a", bug=None, bug_files={"calc.py": "def add(a, b):\n    return a - b\n"},
                                          fix="--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
                                              "-    return a - b\n+    return a + b\n")])
    task = load_suite(root).tasks[0]
    assert "a - b" in (materialize(task, tmp_path / "b", "buggy") / "calc.py").read_text()
    assert "a + b" in (materialize(task, tmp_path / "f", "fixed") / "calc.py").read_text()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        materialize(task, tmp_path / "full", "buggy")
    with pytest.raises(ValueError, match="state must be"):
        materialize(task, tmp_path / "s", "broken")


def test_patch_that_does_not_apply_names_task_and_patch(tmp_path):
    bad = BUG.replace("return a + b", "return a * b")
    root = make_suite(tmp_path, [fix_task("nope", bug=bad)])
    task = load_suite(root).tasks[0]
    with pytest.raises(TaskError) as info:
        materialize(task, tmp_path / "b", "buggy")
    msg = str(info.value)
    assert "nope.yaml: task nope: field 'bug': the bug patch to the clean repository does not apply" in msg and "calc.py" in msg
    # the fix is judged against the buggy state
    root = make_suite(tmp_path / "2", [fix_task("nofix", fix=BUG)])
    task = load_suite(root).tasks[0]
    materialize(task, tmp_path / "ok", "buggy")
    with pytest.raises(TaskError, match=r"task nofix: field 'fix': the fix patch to the buggy repository does not apply: .*calc.py"):
        materialize(task, tmp_path / "f", "fixed")


def test_p0_patches_and_diff_round_trip(tmp_path):
    a = write_repo(tmp_path / "a")
    b = write_repo(tmp_path / "b")
    (b / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    (b / "new.py").write_text("X = 1\n")
    (b / "tests" / "test_calc.py").unlink()
    diff = diff_dirs(a, b)
    assert "--- a/calc.py" in diff and "+++ b/new.py" in diff
    assert changed_paths(diff) == ["calc.py", "new.py", "tests/test_calc.py"]
    apply_patch(a, diff)
    assert diff_dirs(a, b) == ""
    p0 = "--- calc.py\n+++ calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return b + a\n+    return a + b\n"
    apply_patch(a, p0)
    assert "a + b" in (a / "calc.py").read_text()
    with pytest.raises(ValueError, match="does not apply"):
        apply_patch(a, "this is not a patch\n")
    # unprefixed paths keep their directories even when the basename exists at the root
    (a / "sub").mkdir()
    (a / "sub" / "consts.py").write_text("X = 1\n")
    (a / "consts.py").write_text("X = 1\n")
    apply_patch(a, "--- sub/consts.py\n+++ sub/consts.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n")
    assert (a / "sub" / "consts.py").read_text() == "X = 2\n" and (a / "consts.py").read_text() == "X = 1\n"


def test_apply_never_uses_an_enclosing_git_repository(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    inner = write_repo(tmp_path / "deep" / "repo")
    apply_patch(inner, BUG)
    assert "a - b" in (inner / "calc.py").read_text()


def test_git_repo_commit_without_history(tmp_path):
    src = write_repo(tmp_path / "src")
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "clean"], check=True)
    first = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    (src / "calc.py").write_text("SECRET = 'the fix is here'\n")
    subprocess.run(git + ["commit", "-qam", "later"], check=True)
    suite = tmp_path / "suite"
    (suite / "tasks").mkdir(parents=True)
    import yaml

    (suite / "tasks" / "g.yaml").write_text(yaml.safe_dump(fix_task("g", repo={"git": "../src", "commit": first[:10]})))
    task = load_suite(suite).tasks[0]
    out = materialize(task, tmp_path / "out", "buggy")
    assert _files(out) == {"calc.py", "tests/test_calc.py"}
    assert "a - b" in (out / "calc.py").read_text()
    assert not any("SECRET" in p.read_text() for p in out.rglob("*.py"))
    bad = task.model_copy(update={"repo": task.repo.model_copy(update={"commit": "0" * 40})})
    with pytest.raises(TaskError, match="cannot export"):
        materialize(bad, tmp_path / "bad", "clean")


@pytest.mark.parametrize("path,expected", [
    ("tests/test_x.py", True), ("test/helpers.py", True), ("pkg/tests/data.json", True),
    ("test_calc.py", True), ("pkg/calc_test.py", True), ("conftest.py", True), ("sub/conftest.py", True),
    ("pytest.ini", True), ("tox.ini", True), ("setup.cfg", True), ("pyproject.toml", True),
    (".pytest.ini", True), ("pytest.toml", True), ("sub/.pytest.toml", True),
    ("pytest.py", True), ("_pytest/runner.py", True), ("sitecustomize.py", True), ("usercustomize.py", True),
    ("evil.pth", True), ("__pycache__/calc.cpython-311.pyc", True), ("calc.cpython-311-x86_64-linux-gnu.so", True),
    ("/workspace/tests/test_x.py", True), ("tests", True),
    ("calc.py", False), ("pkg/testing_utils.py", False), ("pkg/contest.py", False), ("README.md", False),
    ("latest.py", False), ("attest/x.py", False),
])
def test_is_test_path(path, expected):
    assert is_test_path(path) is expected


def test_symlinks_are_kept_as_symlinks(tmp_path):
    root = make_suite(tmp_path, [fix_task("a")])
    os.symlink("calc.py", root / "repo" / "alias.py")
    task = load_suite(root).tasks[0]
    out = materialize(task, tmp_path / "o", "buggy")
    assert (out / "alias.py").is_symlink() and os.readlink(out / "alias.py") == "calc.py"


def test_cached_materialize_copies_one_tree_per_task_object(tmp_path):
    """Rollouts materialize with cache=True: the same files as without, the bug patch applied
    once per Task object (a changed repository is seen by a newly loaded task, not by it)."""
    import gc

    from fixrl.tasks import Task
    from fixrl.tasks.format.materialize import _cache

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    data = {"id": "t", "repo": str(repo), "issue": "add is wrong",
            "bug": "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return a - b\n",
            "fix": "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n",
            "check": {"command": "python -m pytest -q", "files": {"tests/test_h.py": "def test_x():\n    pass\n"}}}
    task = Task.model_validate(data)
    plain = materialize(task, tmp_path / "plain", "buggy")
    one = materialize(task, tmp_path / "one", "buggy", cache=True)
    (repo / "calc.py").write_text("changed on disk\n")
    two = materialize(task, tmp_path / "two", "buggy", cache=True)
    for d in (one, two):
        assert (d / "calc.py").read_text() == (plain / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n# new\n")
    fresh = Task.model_validate(data)
    assert "# new" in materialize(fresh, tmp_path / "fresh", "buggy", cache=True).joinpath("calc.py").read_text()
    key = (id(task), "buggy")
    tree = _cache[key][1]
    del task
    gc.collect()
    assert key not in _cache and not tree.exists()  # dropped with its task

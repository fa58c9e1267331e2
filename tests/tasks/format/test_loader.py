"""The task format and the loader: every mistake gets a message naming the file and the field."""
from __future__ import annotations

import pytest
import yaml
from suitekit import BUG, FIX, HIDDEN, fix_task, make_suite, question_task

from fixrl.tasks import Suite, TaskError, load_suite, load_task
from fixrl.tasks.format.loader import load_suite_lenient
from fixrl.tasks.format.schema import GitRepo


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_good_suite_loads_with_defaults_paths_and_lists(tmp_path):
    root = make_suite(tmp_path, [fix_task("a", split="heldout", tags=["family:arith", "hand"])],
                      suite={"name": "tiny", "defaults": {"limits": {"max_turns": 5}, "check": {"timeout": 9},
                                          "public_tests": "python -m pytest -q tests"},
                             "rename_pool": ["alpha", "beta"],
                             "family_edits": {"sign": {"old": " - ", "new": " + "}}})
    # a task file holding a list, in a nested folder, with patches and check files given by path
    _write(root / "checks" / "b" / "bug.patch", BUG)
    _write(root / "checks" / "b" / "fix.patch", FIX)
    _write(root / "checks" / "b" / "test_hidden.py", HIDDEN)
    listed = [fix_task("b", bug="checks/b/bug.patch", fix="checks/b/fix.patch",
                       check={"files": {"tests/test_hidden.py": "checks/b/test_hidden.py"}, "timeout": 3},
                       limits={"max_edits": 2}, tags=["family:sign"]),
              question_task("c")]
    _write(root / "tasks" / "more" / "list.yaml", yaml.safe_dump(listed))

    suite = load_suite(root)
    assert isinstance(suite, Suite)
    assert suite.name == "tiny" and suite.rename_pool == ["alpha", "beta"]
    assert suite.tools == ["read", "test", "edit", "submit"]
    assert [t.id for t in suite.tasks] == ["a", "b", "c"]
    a, b, c = suite.tasks
    assert a.limits.max_turns == 5 and a.public_tests == "python -m pytest -q tests"  # suite defaults
    assert a.check.timeout == 30                                 # the task's own value wins
    assert b.limits.max_turns == 5 and b.limits.max_edits == 2   # key by key
    assert b.check.timeout == 3 and b.check.command.startswith("python -m pytest")
    assert b.bug == BUG and b.fix == FIX                         # paths resolved to text
    assert b.check.files == {"tests/test_hidden.py": HIDDEN}
    assert b.suite_dir == root and b.source_file == root / "tasks" / "more" / "list.yaml"
    assert suite.families == ["arith", "sign"]
    assert (suite.family_edits["sign"].old, suite.family_edits["sign"].new) == (" - ", " + ")
    assert [t.id for t in suite.split("heldout")] == ["a"]
    assert [t.id for t in suite.split("train")] == ["b", "c"]
    assert c.kind == "question" and c.answer == "add"
    assert suite.get("b") is b


def test_suite_without_tasks_folder_reads_root_yaml(tmp_path):
    root = make_suite(tmp_path, [])
    (root / "tasks").rmdir()
    _write(root / "one.yaml", yaml.safe_dump(fix_task("one")))
    _write(root / "suite.yaml", "name: flat\n")
    suite = load_suite(root)
    assert suite.name == "flat" and [t.id for t in suite.tasks] == ["one"]


def test_load_task_finds_its_suite(tmp_path):
    root = make_suite(tmp_path, [fix_task("a")], suite={"defaults": {"split": "heldout"}})
    task = load_task(root / "tasks" / "a.yaml", defaults={"split": "heldout"})
    assert task.split == "heldout" and task.suite_dir == root


def test_git_repo_and_commit_are_checked(tmp_path):
    root = make_suite(tmp_path, [fix_task("a", repo={"git": "nope", "commit": "HEAD"})])
    with pytest.raises(TaskError, match=r"a\.yaml: field 'repo\.git': repository .*nope.* not found"):
        load_suite(root)
    root = make_suite(tmp_path / "2", [fix_task("a", repo={"git": "repo"})])
    with pytest.raises(TaskError, match=r"field 'repo\.commit': Field required"):
        load_suite(root)


def _one_error(tmp_path, task=None, text=None, suite=None):
    root = make_suite(tmp_path, [task] if task else [], suite=suite)
    if text is not None:
        _write(root / "tasks" / "x.yaml", text)
    with pytest.raises(TaskError) as info:
        load_suite(root)
    return str(info.value)


def test_malformed_yaml_names_file_and_line(tmp_path):
    msg = _one_error(tmp_path, text="id: x\nissue: [unclosed\nrepo: repo\n")
    assert "tasks/x.yaml" in msg and "line 3" in msg and "invalid YAML" in msg


def test_duplicate_yaml_key(tmp_path):
    msg = _one_error(tmp_path, text="id: x\nid: y\n")
    assert "x.yaml" in msg and "duplicate key 'id'" in msg and "line 2" in msg


def test_missing_field_names_the_field_path(tmp_path):
    task = fix_task("x")
    del task["check"]["command"]
    msg = _one_error(tmp_path, task)
    assert msg.endswith("suite/tasks/x.yaml: field 'check.command': Field required")


def test_unknown_field_suggests_the_right_one(tmp_path):
    task = fix_task("x")
    task["isue"] = task.pop("issue")
    msg = _one_error(tmp_path, task)
    assert "x.yaml: field 'isue': unknown field (did you mean 'issue'?)" in msg
    assert "field 'issue': Field required" in msg
    task = fix_task("x", limits={"max_turn": 3})
    msg = _one_error(tmp_path / "2", task)
    assert "field 'limits.max_turn': unknown field (did you mean 'max_turns'?)" in msg


def test_wrong_types_and_values(tmp_path):
    msg = _one_error(tmp_path, fix_task("x", kind="bugfix", repo=7))
    assert "field 'kind': Input should be 'fix' or 'question'" in msg
    assert "field 'repo': must be a directory path or a mapping {git: PATH, commit: REV}" in msg
    msg = _one_error(tmp_path / "2", fix_task("bad id!"))
    assert "field 'id'" in msg and "not a valid id" in msg
    msg = _one_error(tmp_path / "3", fix_task("x", check={"files": {"../escape.py": "x\n"}}))
    assert "field 'check.files'" in msg and "inside the repository" in msg


def test_kind_specific_fields(tmp_path):
    assert "`fix` (the reference patch) is required" in _one_error(tmp_path, fix_task("x", fix=None))
    q = question_task("q")
    del q["answer"]
    assert "`answer` (the reference answer) is required" in _one_error(tmp_path / "2", q)
    both = fix_task("x", bug_files={"calc.py": "x = 1\n"})
    assert "either `bug`" in _one_error(tmp_path / "3", both)


def test_test_ids_need_a_plain_pytest_command(tmp_path):
    msg = _one_error(tmp_path, fix_task("x", check={"command": "cd tests && python -m pytest -q"}))
    assert "field 'check'" in msg and "plain pytest command" in msg


def test_missing_repo_dir_and_patch_file(tmp_path):
    msg = _one_error(tmp_path, fix_task("x", repo="no-such-dir"))
    assert "x.yaml: field 'repo': directory" in msg and "no-such-dir" in msg and "not found" in msg
    msg = _one_error(tmp_path / "2", fix_task("x", bug="patches/missing.patch"))
    assert "x.yaml: field 'bug': patch file 'patches/missing.patch' not found" in msg


def test_duplicate_ids(tmp_path):
    root = make_suite(tmp_path, [fix_task("a")])
    _write(root / "tasks" / "z.yaml", yaml.safe_dump(fix_task("a")))
    with pytest.raises(TaskError, match=r"z\.yaml: field 'id': duplicate task id 'a' \(also in .*a\.yaml\)"):
        load_suite(root)


def test_lenient_loading_keeps_good_tasks(tmp_path):
    root = make_suite(tmp_path, [fix_task("good")])
    _write(root / "tasks" / "bad.yaml", "id: [\n")
    suite, errors = load_suite_lenient(root)
    assert [t.id for t in suite.tasks] == ["good"]
    assert len(errors) == 1 and errors[0][0].name == "bad.yaml"


def test_suite_level_errors(tmp_path):
    with pytest.raises(TaskError, match="suite directory not found"):
        load_suite(tmp_path / "nope")
    msg = _one_error(tmp_path, fix_task("x"), suite={"defaults": {"limitz": {}}})
    assert "suite.yaml: field 'defaults.limitz': unknown task field (did you mean 'limits'?)" in msg
    msg = _one_error(tmp_path / "2", fix_task("x"), suite={"toolz": []})
    assert "suite.yaml: field 'toolz': unknown field (did you mean 'tools'?)" in msg
    msg = _one_error(tmp_path / "5", fix_task("x", tags=["family:sign"]),
                     suite={"family_edits": {"sing": {"old": "-", "new": "+"}}})
    assert "suite.yaml: field 'family_edits': 'sing' is not the family of any task" in msg
    assert "present: sign" in msg
    msg = _one_error(tmp_path / "6", fix_task("x"), suite={"family_edits": {"sign": {"old": ""}}})
    assert "family_edits.sign" in msg
    root = make_suite(tmp_path / "3", [])
    with pytest.raises(TaskError, match="no tasks found"):
        load_suite(root)
    assert "x.yaml: empty task file" in _one_error(tmp_path / "4", text="")


def test_gitrepo_model():
    assert GitRepo(git="r", commit="abc").commit == "abc"


def test_the_old_policy_key_still_loads_as_rules(tmp_path):
    """Task files and suite.yaml written before the edit rules were renamed say `policy:`;
    they load as `rules:`, field by field as before, in any mix with the new key."""
    root = make_suite(tmp_path, [fix_task("a"), fix_task("b", policy={"relax": ["exec"]}),
                                 fix_task("c", rules={"files": ["calc.py"]})],
                      suite={"policy": {"relax": ["imports"], "reason": "r"},
                             "defaults": {"policy": {"allow_imports": ["json"]}}})
    suite = load_suite(root)
    a, b, c = (suite.get(i) for i in "abc")
    assert a.rules.relax == ["imports"] and a.rules.allow_imports == ["json"] and a.rules.files == ["**/*.py"]
    assert b.rules.relax == ["exec"] and b.rules.allow_imports == ["json"]  # the task's old key overrides
    assert c.rules.files == ["calc.py"] and c.rules.relax == ["imports"]
    assert "policy" not in a.model_dump() and a.model_dump()["rules"]["relax"] == ["imports"]
    root2 = make_suite(tmp_path / "2", [fix_task("a", policy={"relax": ["exec"]}, rules={"relax": []})])
    with pytest.raises(TaskError, match=r"give `rules` only \(`policy` is its old name\), not both"):
        load_suite(root2)

"""Tiny fixture suites for the task tests: a 2-file repository and task files built in a tmp dir."""
from __future__ import annotations

import copy
from pathlib import Path

import yaml

REPO_FILES = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add_public():\n    assert add(2, 2) == 4\n",
}

BUG = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a + b
+    return a - b
"""

FIX = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""

HIDDEN = """\
from calc import add, mul


def test_add():
    assert add(1, 2) == 3


def test_mul():
    assert mul(2, 3) == 6
"""

HIDDEN_TESTS = ["tests/test_hidden.py::test_add", "tests/test_hidden.py::test_mul"]


def fix_task(task_id: str = "add-sign", **over) -> dict:
    task = {
        "id": task_id,
        "repo": "repo",
        "issue": "add(1, 2) returns -1; I expected 3.",
        "bug": BUG,
        "fix": FIX,
        "check": {
            "files": {"tests/test_hidden.py": HIDDEN},
            "command": "python -m pytest -q tests/test_hidden.py",
            "tests": list(HIDDEN_TESTS),
            "timeout": 30,
        },
        "tags": ["family:arith"],
    }
    for key, value in over.items():
        if value is None:
            task.pop(key, None)
        elif isinstance(value, dict) and isinstance(task.get(key), dict):
            task[key] = {**task[key], **value}
        else:
            task[key] = value
    return task


QUESTION_CHECK = """\
import os, sys
answer = os.environ["FIXRL_ANSWER"].strip()
with open("/tmp/fixrl_answer.txt") as f:
    assert f.read().strip() == answer
sys.exit(0 if answer == "add" else 1)
"""


def question_task(task_id: str = "which-fn", **over) -> dict:
    task = {
        "id": task_id,
        "repo": "repo",
        "kind": "question",
        "issue": "Which function of calc.py subtracts when it should add? Answer with its name.",
        "bug": BUG,
        "answer": "add",
        "check": {"files": {"check_answer.py": QUESTION_CHECK}, "command": "python check_answer.py",
                  "timeout": 30},
    }
    task.update(over)
    return task


def write_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    for rel, text in (REPO_FILES if files is None else files).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def make_suite(tmp: Path, tasks: list[dict], suite: dict | None = None,
               repo_files: dict[str, str] | None = None) -> Path:
    """A suite directory under tmp: repo/, suite.yaml (if given), tasks/<id>.yaml."""
    root = Path(tmp) / "suite"
    write_repo(root / "repo", repo_files)
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    if suite is not None:
        (root / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    for task in tasks:
        (root / "tasks" / f"{task['id']}.yaml").write_text(yaml.safe_dump(copy.deepcopy(task), sort_keys=False))
    return root

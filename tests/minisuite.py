"""One builder for the small mutant suites the test folders make in temp dirs: a one-module
repository, bugs made by the generator's own mutation operators, a hidden check file."""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml


def unified_diff(old: str, new: str, path: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))


def write_mutant_suite(root: Path, *, source: str, public_tests: str, hidden_tests: str,
                       picks: list[tuple[str, str, str, str | None]], suite: dict[str, Any]) -> Path:
    """`source` is ops.py; picks are (task id, function, family, split or None for the suite's
    default); `suite` is the suite.yaml content (its defaults must name `repo: repo`)."""
    from fixrl.tasks.generate.mutate import OPERATORS

    (root / "repo" / "tests").mkdir(parents=True)
    (root / "repo" / "ops.py").write_text(source)
    (root / "repo" / "tests" / "test_ops.py").write_text(public_tests)
    (root / "suite.yaml").write_text(yaml.safe_dump(suite))
    (root / "tasks").mkdir()
    for task_id, fn, family, split in picks:
        mutant = OPERATORS[family](source, fn)[0]
        task = {"id": task_id, "function": fn, **({"split": split} if split else {}),
                "tags": [f"family:{family}"],
                "issue": f"`{fn}` gives wrong results; the tests for it fail.",
                "bug_files": {"ops.py": mutant.source}, "fix": unified_diff(mutant.source, source, "ops.py"),
                "check": {"command": "python -m pytest -q tests/test_hidden.py",
                          "files": {"tests/test_hidden.py": hidden_tests}, "timeout": 60}}
        (root / "tasks" / f"{task_id}.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    return root

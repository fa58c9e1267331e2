"""A small suite built in a temp dir for the eval tests: one module, four bug-fix tasks made with
the generator's own mutation operators (so each task's family tag is what the blind policy's
repair knows), all in the heldout split (so `train` is an empty split)."""
from __future__ import annotations

import difflib
import textwrap
from pathlib import Path

import pytest
import yaml

OPS = textwrap.dedent('''\
    """Small helpers."""


    def clamp(x, lo, hi):
        return max(lo, min(x, hi))


    def count_below(xs, limit):
        n = 0
        for x in xs:
            if x < limit:
                n += 1
        return n


    def scale(xs, factor):
        return [x * factor for x in xs]


    def any_negative(xs):
        return any(x < 0 for x in xs) or False
    ''')

PUBLIC_TESTS = textwrap.dedent('''\
    from ops import clamp


    def test_clamp_inside():
        assert clamp(5, 0, 10) == 5
    ''')

HIDDEN_TESTS = textwrap.dedent('''\
    from ops import any_negative, clamp, count_below, scale


    def test_clamp():
        assert clamp(-3, 0, 10) == 0
        assert clamp(30, 0, 10) == 10
        assert clamp(4, 0, 10) == 4


    def test_count_below():
        assert count_below([1, 2, 3, 4], 3) == 2
        assert count_below([], 3) == 0
        assert count_below([5, 5], 5) == 0


    def test_scale():
        assert scale([1, 2, 3], 2) == [2, 4, 6]
        assert scale([4], 0) == [0]


    def test_any_negative():
        assert any_negative([1, -1]) is True
        assert any_negative([0, 1]) is False
    ''')

# (task id, function, family): families chosen so each mutant breaks the hidden tests.
PICKS = [("clamp-minmax", "clamp", "swap_minmax"),
         ("count-flip", "count_below", "flip_comparison"),
         ("count-init", "count_below", "wrong_init"),
         ("scale-arith", "scale", "wrong_arith")]


def _diff(old: str, new: str, path: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"a/{path}", f"b/{path}"))


def build_suite(root: Path) -> Path:
    from tasks.mutate import OPERATORS

    (root / "repo" / "tests").mkdir(parents=True)
    (root / "repo" / "ops.py").write_text(OPS)
    (root / "repo" / "tests" / "test_ops.py").write_text(PUBLIC_TESTS)
    (root / "suite.yaml").write_text(yaml.safe_dump({"name": "mini", "defaults": {
        "repo": "repo", "split": "heldout", "file": "ops.py",
        "public_tests": "python -m pytest -q tests/test_ops.py",
        "limits": {"max_turns": 6, "max_edits": 2}}}))
    (root / "tasks").mkdir()
    for task_id, fn, family in PICKS:
        mutant = OPERATORS[family](OPS, fn)[0]
        task = {"id": task_id, "function": fn, "tags": [f"family:{family}"],
                "issue": f"`{fn}` gives wrong results; the tests for it fail.",
                "bug_files": {"ops.py": mutant.source},
                "fix": _diff(mutant.source, OPS, "ops.py"),
                "check": {"command": "python -m pytest -q tests/test_hidden.py",
                          "files": {"tests/test_hidden.py": HIDDEN_TESTS},
                          "timeout": 60}}
        (root / "tasks" / f"{task_id}.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    return root


@pytest.fixture(scope="session")
def mini_suite(tmp_path_factory) -> Path:
    return build_suite(tmp_path_factory.mktemp("suite") / "mini")

"""A small suite built in a temp dir for the eval tests: one module, four bug-fix tasks made with
the generator's own mutation operators (so each task's family tag is what the blind policy's
repair knows), all in the heldout split (so `train` is an empty split)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from minisuite import write_mutant_suite

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


def build_suite(root: Path) -> Path:
    return write_mutant_suite(root, source=OPS, public_tests=PUBLIC_TESTS, hidden_tests=HIDDEN_TESTS,
                              picks=[(task_id, fn, family, None) for task_id, fn, family in PICKS],
                              suite={"name": "mini", "defaults": {
                                  "repo": "repo", "split": "heldout", "file": "ops.py",
                                  "public_tests": "python -m pytest -q tests/test_ops.py",
                                  "limits": {"max_turns": 6, "max_edits": 2}}})


@pytest.fixture(scope="session")
def mini_suite(tmp_path_factory) -> Path:
    return build_suite(tmp_path_factory.mktemp("suite") / "mini")

"""Builds the `gym` suite from `repo/`: one bug-fix task per function, five bug families, each
of which leaves exactly one lexical marker in the buggy file (so reading the file tells which
repair applies, and a policy that does not read can do no better than guessing the family).

Run from anywhere: `python tasks/suites/gym/build.py`. The output (tests, hidden checks, task
files) is committed; this script documents how it was made.
"""
from __future__ import annotations

import difflib
import importlib.util
import random
import re
import shutil
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE / "repo"

# family -> (clean construct, buggy construct). The buggy construct never occurs in clean code.
FAMILIES = {
    "swap_minmax": ("max(", "min("),
    "flip_comparison": (" >= ", " > "),
    "off_by_one": ("range(n + 1)", "range(n)"),
    "wrong_init": ("total = 0", "total = 1"),
    "wrong_arith": (" + ", " - "),
}

# function -> (module, family, public example, hidden examples). Examples are call strings.
FUNCTIONS = {
    "peak": ("numbers", "swap_minmax", "peak(1, 5, 3)", ["peak(9, 2, 4)", "peak(-1, -7, -3)", "peak(2, 2, 8)"]),
    "twice_bigger": ("numbers", "swap_minmax", "twice_bigger(2, 7)", ["twice_bigger(9, 1)", "twice_bigger(-4, -2)"]),
    "largest": ("lists", "swap_minmax", "largest([3, 8, 1])", ["largest([5, 2, 9, 4])", "largest([-3, -1, -2])"]),
    "floor_all": ("lists", "swap_minmax", "floor_all([1, 5, -2], 0)", ["floor_all([3, 7], 4)", "floor_all([-5, -1], -2)"]),
    "longest_word": ("strings", "swap_minmax", "longest_word(['a', 'abc', 'ab'])", ["longest_word(['hello', 'hi'])", "longest_word(['x', 'yyyy', 'zz'])"]),
    "best_score": ("scores", "swap_minmax", "best_score([4, 9, 2])", ["best_score([1, 1, 7])", "best_score([])", "best_score([-2, -8])"]),
    "at_least": ("numbers", "flip_comparison", "at_least(5, 5)", ["at_least(7, 3)", "at_least(2, 3)", "at_least(0, 0)"]),
    "keep_from": ("lists", "flip_comparison", "keep_from([1, 2, 3, 4], 3)", ["keep_from([5, 5, 1], 5)", "keep_from([0, 9], 1)"]),
    "grade": ("strings", "flip_comparison", "grade(18)", ["grade(30)", "grade(17)", "grade(18)"]),
    "all_positive": ("scores", "flip_comparison", "all_positive([0, 1, 2])", ["all_positive([3, 4])", "all_positive([1, -1])", "all_positive([0])"]),
    "higher": ("scores", "flip_comparison", "higher(3, 3)", ["higher(5, 2)", "higher(1, 4)", "higher(2, 2)"]),
    "reach": ("ranges", "flip_comparison", "reach([1, 4], 4)", ["reach([1, 2], 5)", "reach([6], 6)", "reach([7, 1], 3)"]),
    "triangle": ("numbers", "off_by_one", "triangle(4)", ["triangle(1)", "triangle(10)", "triangle(0)"]),
    "squares_upto": ("lists", "off_by_one", "squares_upto(3)", ["squares_upto(0)", "squares_upto(5)"]),
    "labels_upto": ("strings", "off_by_one", "labels_upto(2)", ["labels_upto(0)", "labels_upto(4)"]),
    "multiples_upto": ("scores", "off_by_one", "multiples_upto(3, 5)", ["multiples_upto(0, 2)", "multiples_upto(4, 3)"]),
    "count_upto": ("ranges", "off_by_one", "count_upto(3)", ["count_upto(0)", "count_upto(6)"]),
    "sum_upto": ("ranges", "off_by_one", "sum_upto(5)", ["sum_upto(1)", "sum_upto(100)"]),
    "total_of": ("lists", "wrong_init", "total_of([1, 2, 3])", ["total_of([])", "total_of([10, -4])"]),
    "letter_count": ("strings", "wrong_init", "letter_count(['ab', 'c'])", ["letter_count([])", "letter_count(['hello', 'world'])"]),
    "count_of": ("strings", "wrong_init", "count_of(['a', 'b', 'a'], 'a')", ["count_of([], 'x')", "count_of([1, 2, 3], 4)", "count_of([7, 7], 7)"]),
    "sum_squares": ("scores", "wrong_init", "sum_squares([1, 2, 3])", ["sum_squares([])", "sum_squares([4])"]),
    "weighted_total": ("ranges", "wrong_init", "weighted_total([5, 5, 5])", ["weighted_total([])", "weighted_total([1, 0, 2])"]),
    "values_total": ("ranges", "wrong_init", "values_total({'a': 2, 'b': 3})", ["values_total({})", "values_total({'x': -1})"]),
    "plus": ("numbers", "wrong_arith", "plus(2, 3)", ["plus(-1, 1)", "plus(10, 0)", "plus(4, 4)"]),
    "with_tax": ("numbers", "wrong_arith", "with_tax(100, 0.5)", ["with_tax(10, 0)", "with_tax(8, 0.25)"]),
    "shift_all": ("lists", "wrong_arith", "shift_all([1, 2], 3)", ["shift_all([], 5)", "shift_all([0, -2], 2)"]),
    "full_name": ("strings", "wrong_arith", "full_name('Ada', 'Lovelace')", ["full_name('A', 'B')", "full_name('x', '')"]),
    "add_points": ("scores", "wrong_arith", "add_points((1, 2), (3, 4))", ["add_points((0, 0), (5, 6))", "add_points((-1, 1), (1, -1))"]),
    "next_odd": ("ranges", "wrong_arith", "next_odd(3)", ["next_odd(0)", "next_odd(10)"]),
}

# Two functions of every family and two of every module are held out; no held-out function is
# ever trained on. Every module keeps three or four families in train, so neither the file the
# issue names nor the family a module's train bugs came from tells a held-out bug's fix.
HELDOUT = {"floor_all", "total_of", "twice_bigger", "with_tax", "sum_upto", "reach",
           "higher", "multiples_upto", "letter_count", "full_name"}


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"gym_build_{path.stem}_{random.random()}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def function_span(lines: list[str], name: str) -> tuple[int, int]:
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
    end = start + 1
    while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end].strip()):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    return start, end


def inject(source: str, name: str, family: str) -> str:
    """The buggy file: the family's clean construct replaced by its marker, once, in `name`."""
    clean, buggy = FAMILIES[family]
    lines = source.splitlines(keepends=True)
    start, end = function_span(lines, name)
    for i in range(start + 1, end):
        if clean in lines[i]:
            lines[i] = lines[i].replace(clean, buggy, 1)
            out = "".join(lines)
            for other, (_, marker) in FAMILIES.items():
                assert out.count(marker) == (1 if other == family else 0), (name, other)
            return out
    raise ValueError(f"{name}: no {clean!r} to mutate")


def diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{path}", f"b/{path}"))


class _Dumper(yaml.SafeDumper):
    """Patches as literal blocks, so task files read like the diffs they hold."""


_Dumper.add_representer(str, lambda d, s: d.represent_scalar(
    "tag:yaml.org,2002:str", s, style="|" if "\n" in s else None))


def evaluate(module, call: str):
    return eval(call, vars(module))  # the calls are this file's own constants


def main() -> int:
    declared = yaml.safe_load((HERE / "suite.yaml").read_text()).get("family_edits", {})
    wanted = {f: {"old": buggy, "new": clean} for f, (clean, buggy) in FAMILIES.items()}
    assert declared == wanted, f"suite.yaml's family_edits must be {wanted}"
    public = ["# Quick checks of every function (the agent's `test` tool runs these).\n"]
    modules = sorted({m for m, *_ in FUNCTIONS.values()})
    public.append("".join(f"from gym.{m} import *  # noqa: F403\n" for m in modules))
    for d in ("hidden", "tasks", "patches"):
        shutil.rmtree(HERE / d, ignore_errors=True)
        (HERE / d).mkdir()
    for name, (module_name, family, example, hidden_calls) in FUNCTIONS.items():
        rel = f"gym/{module_name}.py"
        source = (REPO / rel).read_text()
        buggy_source = inject(source, name, family)
        clean_mod = load_module(REPO / rel)
        tmp = HERE / f".build_{name}.py"
        tmp.write_text(buggy_source)
        try:
            buggy_mod = load_module(tmp)
        finally:
            tmp.unlink()
        expected = evaluate(clean_mod, example)
        public.append(f"\n\ndef test_{name}():\n    assert {example} == {expected!r}\n")
        tests, node_ids = [f"from gym.{module_name} import {name}\n"], []
        for i, call in enumerate([example] + hidden_calls):
            tests.append(f"\n\ndef test_{name}_{i}():\n    assert {call} == {evaluate(clean_mod, call)!r}\n")
            node_ids.append(f"tests/test_hidden_{name}.py::test_{name}_{i}")
        (HERE / "hidden" / f"test_{name}.py").write_text("".join(tests))
        try:
            got = repr(evaluate(buggy_mod, example))
        except Exception as e:  # the symptom a user would see
            got = f"raises {type(e).__name__}: {e}"
        else:
            got = f"returns {got}"
        assert got != f"returns {expected!r}", (name, "public example does not show the bug")
        # The issue names the function (renamed per episode) and its file, and nothing else: a
        # failing example would tell the task apart without reading (a model memorises each
        # train task's file and fix from it) and hint at the family; the `test` tool shows it.
        issue = f"`{name}` in `{rel}` gives wrong results: its test in `tests/test_gym.py` fails. Please fix it."
        task = {
            "id": f"gym-{name}",
            "kind": "fix",
            "issue": issue,
            "bug": f"patches/{name}.bug.patch",
            "fix": f"patches/{name}.fix.patch",
            "function": name,
            "file": rel,
            "split": "heldout" if name in HELDOUT else "train",
            "tags": [f"family:{family}", f"function:{name}"],
            "check": {
                "files": {f"tests/test_hidden_{name}.py": f"hidden/test_{name}.py"},
                "command": f"python -m pytest -q tests/test_hidden_{name}.py",
                "tests": node_ids,
            },
        }
        (HERE / "patches" / f"{name}.bug.patch").write_text(diff(rel, source, buggy_source))
        (HERE / "patches" / f"{name}.fix.patch").write_text(diff(rel, buggy_source, source))
        (HERE / "tasks" / f"{name}.yaml").write_text(yaml.dump(task, Dumper=_Dumper, sort_keys=False, width=100))
    (REPO / "tests" / "test_gym.py").write_text("".join(public))
    print(f"wrote {len(FUNCTIONS)} tasks ({len(HELDOUT)} held out) to {HERE / 'tasks'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

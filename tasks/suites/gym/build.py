"""Builds the `gym` suite from `repo/`: one bug-fix task per function and family whose clean
construct the function holds, five bug families, each of which leaves exactly one lexical marker
in the buggy file (so reading the file tells which repair applies, and a policy that does not
read can do no better than guessing the family).

Run from anywhere: `python tasks/suites/gym/build.py`. The output (tests, hidden checks, task
files) is committed; this script documents how it was made.
"""
from __future__ import annotations

import difflib
import importlib.util
import random
import shutil
import sys
from pathlib import Path

import yaml
from drills import drill_functions, example_calls

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

# function -> (module, example calls). Every function holds the clean construct of two or three
# families, and each of them makes a task: the same function (and file) comes with different
# bugs, so neither the function nor the file tells the fix -- only the marker a read shows.
# The first two calls are the public test (they show every one of the function's bugs); the
# hidden check runs them all.
FUNCTIONS = {
    "triangle": ("numbers", ["triangle(4)", "triangle(1)", "triangle(10)", "triangle(0)"]),
    "capped": ("numbers", ["capped(2, 3, 5)", "capped(1, 1, 5)", "capped(4, 4, 3)", "capped(0, 0, 9)"]),
    "peak_sum": ("numbers", ["peak_sum(1, 5, 3)", "peak_sum(9, 2, 4)", "peak_sum(-1, -7, 0)"]),
    "at_least_sum": ("numbers", ["at_least_sum(2, 3, 5)", "at_least_sum(4, 1, 4)", "at_least_sum(1, 1, 3)", "at_least_sum(0, 0, 0)"]),
    "count_steps": ("numbers", ["count_steps(4)", "count_steps(2)", "count_steps(0)", "count_steps(7)"]),
    "bigger_double": ("numbers", ["bigger_double(2, 7)", "bigger_double(9, 1)", "bigger_double(-4, -2)"]),
    "top_total": ("lists", ["top_total([1, 2, 3, 4], 3)", "top_total([5, 5, 1], 5)", "top_total([], 1)", "top_total([0, 9], 1)"]),
    "shift_max": ("lists", ["shift_max([1, -5, 2], 3)", "shift_max([0, 4], 1)", "shift_max([], 2)"]),
    "squares_upto": ("lists", ["squares_upto(3)", "squares_upto(0)", "squares_upto(5)"]),
    "keep_big": ("lists", ["keep_big([1, 2, 3, 4], 2)", "keep_big([5, 6, 1], 5)", "keep_big([0, 9], 0)"]),
    "total_of": ("lists", ["total_of([1, 2, 3])", "total_of([10, 4])", "total_of([])"]),
    "floor_all": ("lists", ["floor_all([1, 5, 0], 2)", "floor_all([3, 7], 4)", "floor_all([-5, 1], 0)"]),
    "longest_len": ("strings", ["longest_len(['a', 'abc', 'ab'])", "longest_len(['', ''])", "longest_len(['hello', 'hi'])", "longest_len([])"]),
    "grade": ("strings", ["grade(16, 2)", "grade(10, 1)", "grade(30, 0)", "grade(17, 0)"]),
    "labels_upto": ("strings", ["labels_upto(2)", "labels_upto(0)", "labels_upto(4)"]),
    "letter_count": ("strings", ["letter_count(['ab', 'c', ''])", "letter_count(['hello', 'world'])", "letter_count([])"]),
    "first_words": ("strings", ["first_words(['a', 'b', 'c', 'd'], 1)", "first_words(['x', 'y', 'z'], 2)", "first_words(['q', 'r'], 0)"]),
    "count_long": ("strings", ["count_long(['ab', 'abc', 'a'], 2)", "count_long(['hello', 'hi'], 5)", "count_long([], 1)"]),
    "best_score": ("scores", ["best_score([4, 9, 2], 1)", "best_score([1, 1, 7], 0)", "best_score([-2, -8], 3)"]),
    "all_pass": ("scores", ["all_pass([1, 2], 2)", "all_pass([3, 4], 5)", "all_pass([1, -1], 0)", "all_pass([0], 1)"]),
    "multiples_upto": ("scores", ["multiples_upto(3, 5)", "multiples_upto(0, 2)", "multiples_upto(4, 3)"]),
    "sum_squares": ("scores", ["sum_squares([1, -2, 3])", "sum_squares([])", "sum_squares([4])"]),
    "add_points": ("scores", ["add_points((1, 2), (3, 4))", "add_points((5, 0), (0, 6))", "add_points((-1, 1), (1, -1))"]),
    "higher": ("scores", ["higher(3, 5, 2)", "higher(1, 4, 1)", "higher(5, 2, 0)", "higher(2, 2, 0)"]),
    "count_upto": ("ranges", ["count_upto(3)", "count_upto(0)", "count_upto(6)"]),
    "sum_upto": ("ranges", ["sum_upto(3)", "sum_upto(1)", "sum_upto(10)"]),
    "weighted_total": ("ranges", ["weighted_total(3)", "weighted_total(0)", "weighted_total(5)"]),
    "next_odd": ("ranges", ["next_odd(3)", "next_odd(-2)", "next_odd(10)"]),
    "values_total": ("ranges", ["values_total({'a': 2, 'b': 3}, 3)", "values_total({}, 0)", "values_total({'x': 1}, 0)"]),
    "reach": ("ranges", ["reach([1, 2], 4, 2)", "reach([6], 7, 0)", "reach([7, 1], 3, 0)"]),
}

# Two functions of every module are held out, with all their bugs; no held-out function is ever
# trained on, and every family has held-out tasks.
HELDOUT = {"count_steps", "peak_sum", "total_of", "floor_all", "grade", "labels_upto",
           "sum_squares", "multiples_upto", "sum_upto", "reach"}

PUBLIC_CALLS = 2

# Generated practice functions (`drills.py`), train split only, DRILLS_PER_MODULE to a module
# `gym/<word>.py`: what varies across them is everything but the bug's constructs.
DRILLS = 100
DRILLS_PER_MODULE = 5
DRILL_SEED = 0
# The practice modules' names: words, as files in a real repository are named and as the
# hand-written modules are, and split into tokens as variously as theirs. Numbered names
# (`drill_07`) made the path a tiny model copies from the issue into its first call a digit on
# 980 of 1,100 demonstrations; it then wrote `gym/numbers.py` for `gym/strings.py` on held-out
# tasks (0.43 of first calls copied the path, one seed's start).
DRILL_MODULES = ("garden", "harbor", "kitchen", "market", "meadow", "orchard", "library", "station",
                 "theater", "village", "canyon", "island", "forest", "valley", "bakery", "museum",
                 "castle", "tunnel", "cellar", "quarry")


def families_of(source: str, name: str) -> list[str]:
    """The families whose clean construct occurs in `name`'s body: one task each."""
    lines = source.splitlines(keepends=True)
    start, end = function_span(lines, name)
    body = "".join(lines[start + 1:end])
    # a " + " only inside `range(n + 1)` is the off-by-one family's construct, not arithmetic
    arith = body.replace(FAMILIES["off_by_one"][0], "")
    return [f for f, (clean, _) in FAMILIES.items() if clean in (arith if f == "wrong_arith" else body)]


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
    # the arithmetic family's " + " is never the one inside the off-by-one family's `range(n + 1)`
    keep = FAMILIES["off_by_one"][0] if family == "wrong_arith" else None
    for i in range(start + 1, end):
        line = lines[i].replace(keep, "\0") if keep else lines[i]
        if clean in line:
            line = line.replace(clean, buggy, 1)
            lines[i] = line.replace("\0", keep) if keep else line
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


def _run(source: str, call: str):
    scope: dict = {}
    exec(source, scope)  # build.py's own generated code
    return eval(call, scope)


def drill_calls(rng: random.Random, source: str, name: str, arg_calls) -> list[str] | None:
    """Example calls for a generated function: two public ones that together show each of its
    bugs (a wrong result or an error), then up to three more for the hidden check; None when
    no two of 40 drawn calls do, or the function holds fewer than two families."""
    families = families_of(source, name)
    if len(families) < 2:
        return None
    candidates, expected = [], {}
    for call in dict.fromkeys(arg_calls(rng, 40)):
        try:
            expected[call] = _run(source, call)
            candidates.append(call)
        except Exception:  # a call the clean function cannot take makes a poor example
            continue
    shown = {}
    for call in candidates:
        shown[call] = set()
        for family in families:
            try:
                if _run(inject(source, name, family), call) != expected[call]:
                    shown[call].add(family)
            except Exception:
                shown[call].add(family)
    for i, first in enumerate(candidates):
        for second in candidates[i + 1:]:
            if shown[first] | shown[second] == set(families):
                rest = [c for c in candidates if c not in (first, second)][:3]
                return [first, second, *rest]
    return None


def write_drills() -> dict[str, tuple[str, list[str]]]:
    """Generate the practice modules into `repo/gym/<DRILL_MODULES>.py`; their FUNCTIONS entries."""
    sys.path.insert(0, str(HERE))

    hand = {m for m, *_ in FUNCTIONS.values()}
    assert len(DRILL_MODULES) * DRILLS_PER_MODULE == DRILLS and not set(DRILL_MODULES) & hand, \
        "one new DRILL_MODULES name per DRILLS_PER_MODULE drills"
    for old in (REPO / "gym").glob("*.py"):
        if old.stem not in {"__init__", *hand}:
            old.unlink()
    rng = random.Random(DRILL_SEED)
    kept = []
    for drill in drill_functions(rng, taken=set(FUNCTIONS)):
        calls = drill_calls(rng, drill.source, drill.name, lambda r, n, d=drill: example_calls(r, d, n))
        if calls:
            kept.append((drill, calls))
        if len(kept) == DRILLS:
            break
    table = {}
    for start in range(0, DRILLS, DRILLS_PER_MODULE):
        module = DRILL_MODULES[start // DRILLS_PER_MODULE]
        group = kept[start:start + DRILLS_PER_MODULE]
        text = '"""Practice functions, generated by the suite\'s build.py (drills.py)."""\n'
        (REPO / "gym" / f"{module}.py").write_text(text + "".join(f"\n\n{d.source}" for d, _ in group))
        table.update({d.name: (module, calls) for d, calls in group})
    return table


def main() -> int:
    declared = yaml.safe_load((HERE / "suite.yaml").read_text()).get("family_edits", {})
    wanted = {f: {"old": buggy, "new": clean} for f, (clean, buggy) in FAMILIES.items()}
    assert declared == wanted, f"suite.yaml's family_edits must be {wanted}"
    functions = {**FUNCTIONS, **write_drills()}
    public = ["# Quick checks of every function (the agent's `test` tool runs these).\n"]
    modules = sorted({m for m, *_ in functions.values()})
    public.append("".join(f"from gym.{m} import *  # noqa: F403\n" for m in modules))
    counts: dict[tuple[str, str], int] = {}
    for d in ("hidden", "tasks", "patches"):
        shutil.rmtree(HERE / d, ignore_errors=True)
        (HERE / d).mkdir()
    for name, (module_name, calls) in functions.items():
        rel = f"gym/{module_name}.py"
        source = (REPO / rel).read_text()
        clean_mod = load_module(REPO / rel)
        expected = {call: evaluate(clean_mod, call) for call in calls}
        public.append(f"\n\ndef test_{name}():\n" + "".join(
            f"    assert {call} == {expected[call]!r}\n" for call in calls[:PUBLIC_CALLS]))
        tests, node_ids = [f"from gym.{module_name} import {name}\n"], []
        for i, call in enumerate(calls):
            tests.append(f"\n\ndef test_{name}_{i}():\n    assert {call} == {expected[call]!r}\n")
            node_ids.append(f"tests/test_hidden_{name}.py::test_{name}_{i}")
        (HERE / "hidden" / f"test_{name}.py").write_text("".join(tests))
        # The issue names the function (renamed per episode) and its file, and nothing else: a
        # failing example would tell the task apart without reading and hint at the family; the
        # `test` tool shows it. Every bug of a function has the same issue.
        issue = f"`{name}` in `{rel}` gives wrong results: its test in `tests/test_gym.py` fails. Please fix it."
        families = families_of(source, name)
        assert len(families) >= 2, (name, families)
        for family in families:
            buggy_source = inject(source, name, family)
            tmp = HERE / f".build_{name}.py"
            tmp.write_text(buggy_source)
            try:
                buggy_mod = load_module(tmp)
            finally:
                tmp.unlink()

            def shows(call: str, buggy_mod=buggy_mod, expected=expected) -> bool:
                try:
                    return evaluate(buggy_mod, call) != expected[call]
                except Exception:  # the symptom a user would see
                    return True

            assert any(shows(c) for c in calls[:PUBLIC_CALLS]), (name, family, "public test does not show the bug")
            stem = f"{name}.{family}"
            task = {
                "id": f"gym-{name}-{family}",
                "kind": "fix",
                "issue": issue,
                "bug": f"patches/{stem}.bug.patch",
                "fix": f"patches/{stem}.fix.patch",
                "function": name,
                "file": rel,
                "split": "heldout" if name in HELDOUT else "train",
                "tags": [f"family:{family}", f"function:{name}"],
                "check": {
                    "files": {f"tests/test_hidden_{name}.py": f"hidden/test_{name}.py"},
                    "command": f"python -m pytest -q -p no:anyio tests/test_hidden_{name}.py",
                    "tests": node_ids,
                },
            }
            (HERE / "patches" / f"{stem}.bug.patch").write_text(diff(rel, source, buggy_source))
            (HERE / "patches" / f"{stem}.fix.patch").write_text(diff(rel, buggy_source, source))
            (HERE / "tasks" / f"{stem}.yaml").write_text(yaml.dump(task, Dumper=_Dumper, sort_keys=False, width=100))
            counts[(task["split"], family)] = counts.get((task["split"], family), 0) + 1
    (REPO / "tests" / "test_gym.py").write_text("".join(public))
    for split in ("train", "heldout"):
        print(split, {f: counts.get((split, f), 0) for f in FAMILIES})
    print(f"wrote {sum(counts.values())} tasks of {len(functions)} functions ({len(HELDOUT)} held out) to {HERE / 'tasks'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

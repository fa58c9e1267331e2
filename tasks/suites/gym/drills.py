"""Generated practice functions for the gym's train split: many small functions, each holding the
clean constructs of two or more bug families in varied code around them.

Why: with 20 hand-written train functions a tiny model learns each train function's fixes (which
line of which file changed) and nothing that carries to an unseen function; across a hundred
functions that differ in everything but the constructs, the marker a read shows is the only thing
that tells the fix. Held-out tasks stay hand-written, so what carries over is the marker, not the
generator's style.

`drill_functions(rng, taken)` is deterministic for a seeded `rng`; `build.py` keeps the functions
whose bugs two calls can show and writes them into `repo/`.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterator

NUMBER_PARAMS = ["a", "b", "c", "k", "m", "w", "lo", "cap", "base", "step", "limit", "bonus", "floor", "extra"]
LIST_PARAMS = ["xs", "items", "values", "nums", "marks", "data", "seq", "scores"]
LOOP_VARS = ["i", "j", "t", "v"]
ITEM_VARS = ["x", "item", "value", "mark", "s"]
VERBS = ["sum", "count", "pick", "scan", "fold", "grow", "clip", "mark", "rank", "tally", "weigh", "lift",
         "merge", "bound", "gather", "measure", "score", "stack", "trim", "blend"]
NOUNS = ["steps", "points", "coins", "tiles", "beads", "marks", "gems", "laps", "seeds", "boxes", "rungs",
         "notes", "cells", "pegs", "chips", "stars", "bolts", "pages", "rows", "keys"]


@dataclass
class Drill:
    name: str
    source: str
    """The function's clean source (no bug marker: no `min(`, ` > `, ` - `, `range(n)`, `total = 1`)."""
    arg_kinds: list[str]
    """Per parameter: `int` or `list`, for drawing example calls."""


def _loop_range(rng: random.Random, name: str) -> Drill:
    """An accumulation over range(n + 1), guarded or not, into `total` or a list."""
    k, i = rng.choice(NUMBER_PARAMS), rng.choice(LOOP_VARS)
    guard = rng.choice([f"if {i} >= {k}:", f"if {i} * 2 >= {k}:", f"if {i} % 2 == 0:", None])
    into_list = rng.random() < 0.3
    step = rng.choice([f"{i}", f"max({i}, {k})", f"{i} + {k}", f"{i} * {k}", "1", f"{i} * {i}", f"max({k}, 1)"])
    if into_list:
        lines = ["out = []", f"for {i} in range(n + 1):"]
        body = f"out.append({step})"
        ret = rng.choice(["return out", f"return out + [{k}]"])
    else:
        lines = ["total = 0", f"for {i} in range(n + 1):"]
        body = f"total += {step}"
        ret = rng.choice(["return total", f"return total + {k}", f"return max(total, {k})", "return total * 2"])
    if guard:
        lines += [f"    {guard}", f"        {body}"]
    else:
        lines += [f"    {body}"]
    lines.append(ret)
    return Drill(name, _function(name, ["n", k], lines), ["int", "int"])


def _loop_list(rng: random.Random, name: str) -> Drill:
    """A fold over a list parameter, with a threshold."""
    xs, k, x = rng.choice(LIST_PARAMS), rng.choice(NUMBER_PARAMS), rng.choice(ITEM_VARS)
    guard = rng.choice([f"if {x} >= {k}:", f"if {x} + 1 >= {k}:", f"if {x} * 2 >= {k}:", None])
    step = rng.choice([f"{x}", f"max({x}, {k})", f"{x} + 1", f"{x} + {k}", "1", f"{x} * {x}", f"max({x}, 0)"])
    init = rng.choice(["total = 0", "total = 0", f"total = {k}"])
    lines = [init, f"for {x} in {xs}:"]
    if guard:
        lines += [f"    {guard}", f"        total += {step}"]
    else:
        lines += [f"    total += {step}"]
    lines.append(rng.choice(["return total", f"return max(total, {k})", "return total + 1", "return total * 2"]))
    return Drill(name, _function(name, [xs, k], lines), ["list", "int"])


def _branch(rng: random.Random, name: str) -> Drill:
    """Straight-line code: a comparison that picks between two expressions."""
    a, b, c = rng.sample(NUMBER_PARAMS, 3)
    cond = rng.choice([f"{a} + {b} >= {c}", f"{a} >= {b}", f"max({a}, {b}) >= {c}", f"{a} * 2 >= {b} + {c}"])
    then = rng.choice([f"max({a}, {c})", f"{a} + {c}", f"{b} * 2", f"max({a}, {b}) + {c}", f"{c}"])
    other = rng.choice([f"{b} + 1", f"max({b}, {c})", f"{a} * {b}", f"{c} + {a}", "0"])
    if rng.random() < 0.3:
        lines = [f"return {then} if {cond} else {other}"]
    else:
        lines = [f"if {cond}:", f"    return {then}", f"return {other}"]
    return Drill(name, _function(name, [a, b, c], lines), ["int", "int", "int"])


def _count_upto(rng: random.Random, name: str) -> Drill:
    """A running total with a cut-off inside a range loop."""
    k, i = rng.choice(NUMBER_PARAMS), rng.choice(LOOP_VARS)
    lines = ["total = 0", f"for {i} in range(n + 1):",
             f"    if total + {i} >= {k}:", "        break", f"    total += {i}", "return total"]
    if rng.random() < 0.5:
        lines[2] = f"    if max(total, {i}) >= {k}:"
    return Drill(name, _function(name, ["n", k], lines), ["int", "int"])


SHAPES = [_loop_range, _loop_list, _branch, _count_upto]


def _function(name: str, params: list[str], lines: list[str]) -> str:
    return f"def {name}({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in lines)


def drill_functions(rng: random.Random, taken: set[str]) -> Iterator[Drill]:
    """Distinct functions (no name in `taken`, no two bodies alike), in a fixed order for `rng`'s
    seed; endless (the caller keeps the ones whose bugs its calls can show)."""
    bodies, names = set(), set(taken)
    while len(names) < len(taken) + len(VERBS) * len(NOUNS):
        name = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
        if name in names:
            continue
        drill = rng.choice(SHAPES)(rng, name)
        body = drill.source.split("\n", 1)[1]
        if body in bodies:
            continue
        names.add(name)
        bodies.add(body)
        yield drill


def example_calls(rng: random.Random, drill: Drill, count: int) -> list[str]:
    """`count` calls with small arguments (build.py keeps the ones that show every bug)."""
    def arg(kind: str) -> str:
        if kind == "list":
            return repr([rng.randint(-2, 6) for _ in range(rng.randint(0, 4))])
        return str(rng.randint(-1, 6))
    return [f"{drill.name}({', '.join(arg(k) for k in drill.arg_kinds)})" for _ in range(count)]

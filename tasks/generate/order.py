"""Ordering, choosing and splitting candidates: pure functions of the seeded stream, so a run with
the same seed orders, chooses and splits the same way whatever ran before.

What this does not guarantee: the same order under another seed, or when the candidates differ."""
from __future__ import annotations

import random
from collections import defaultdict

from fixrl.tasks.generate.candidate import Candidate


def round_robin(cands: list[Candidate], rng: random.Random) -> list[Candidate]:
    """Round-robin over modules, over each module's functions and over each function's families,
    all in seeded order, so that any prefix is spread over all three. The families of
    successive functions start at successive families, so the first candidates differ in family too."""
    fams = sorted({c.mutant.op for c in cands})
    rng.shuffle(fams)
    by_file: dict[str, dict[str, list[Candidate]]] = defaultdict(lambda: defaultdict(list))
    for c in cands:
        by_file[c.file][c.qualname].append(c)
    files = sorted(by_file)
    rng.shuffle(files)
    per_file = []
    for f in files:
        fns = sorted(by_file[f])
        rng.shuffle(fns)
        per_file.append([by_file[f][q] for q in fns])
    streams = []
    for j, group in enumerate(_interleave(per_file)):
        by_op: dict[str, list[Candidate]] = defaultdict(list)
        for c in group:
            by_op[c.mutant.op].append(c)
        for op in by_op:
            rng.shuffle(by_op[op])
        ops = [op for op in fams if op in by_op]
        k = j % len(ops)
        streams.append(_interleave([by_op[op] for op in ops[k:] + ops[:k]]))
    return _interleave(streams)


def _interleave(lists: list[list]) -> list:
    out = []
    for i in range(max((len(x) for x in lists), default=0)):
        out.extend(x[i] for x in lists if i < len(x))
    return out


def split_by_function(functions: list[str], weights: dict[str, int], heldout_frac: float,
                      rng: random.Random) -> set[str]:
    """Functions held out: a seeded subset whose share of tasks is about `heldout_frac`."""
    if heldout_frac <= 0 or len(functions) < 2:
        return set()
    order = sorted(functions)
    rng.shuffle(order)
    total = sum(weights[f] for f in order)
    held: set[str] = set()
    count = 0
    for f in order:
        if count >= heldout_frac * total or len(held) >= len(order) - 1:
            break
        held.add(f)
        count += weights[f]
    return held


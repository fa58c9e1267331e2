"""Turning a target text into exact-snippet edits, and judging whether an edit was the reference
fix's (the reference fix itself, as files: tasks.format.reference).

Used by the env (`first_edit_right`) and the scripted plans (the oracle's edits).
"""
from __future__ import annotations

import ast
import difflib
import logging
import os
import re

from fixrl.tasks.format.reference import Reference, reference
from fixrl.tasks.format.schema import Task

log = logging.getLogger(__name__)


def next_edit(current: str, target: str, edits_left: int | None = None) -> tuple[str, str] | None:
    """One exact-snippet edit (old, new) that moves `current` towards `target`: the first
    differing region, or all of them merged into one when `edits_left` is 1. `old` is widened
    with context lines until it occurs exactly once in `current`. None when they are equal."""
    if current == target:
        return None
    cur = current.splitlines(keepends=True)
    tgt = target.splitlines(keepends=True)
    ops = [op for op in difflib.SequenceMatcher(None, cur, tgt, autojunk=False).get_opcodes()
           if op[0] != "equal"]
    if not ops:
        return None
    if edits_left == 1 and len(ops) > 1:
        _, i1, _, j1, _ = ops[0]
        _, _, i2, _, j2 = ops[-1]
    else:
        _, i1, i2, j1, j2 = ops[0]
    a, b = i1, i2
    replacement = "".join(tgt[j1:j2])
    while True:
        old = "".join(cur[a:b])
        if old and current.count(old) == 1:
            break
        if a == 0 and b == len(cur):
            break
        # Widen alternately below and above, preferring the side that exists.
        if (b - i2 <= i1 - a and b < len(cur)) or a == 0:
            b += 1
        else:
            a -= 1
    old = "".join(cur[a:b])
    new = "".join(cur[a:i1]) + replacement + "".join(cur[i2:b])
    if not old:  # empty file: nothing to anchor an exact-snippet edit on
        return None
    return old, new


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def shrink_edit(text: str, old: str, new: str) -> tuple[str, str]:
    """The smallest token-aligned edit (old', new') with the same result as replacing `old`
    (which occurs once in `text`) by `new`: the changed characters, widened to whole tokens
    (identifiers, numbers, single punctuation marks, whitespace runs), then a token at a time,
    right then left, until `old'` occurs exactly once. `return min(xs)` -> `return max(xs)`
    becomes `min` -> `max`; what a careful agent would type, and much less to copy than a line."""
    start = text.find(old)
    if start < 0 or text.count(old) != 1 or old == new:
        return old, new
    p = len(os.path.commonprefix([old, new]))
    s = len(os.path.commonprefix([old[p:][::-1], new[p:][::-1]]))
    A, B = start + p, start + len(old) - s                   # text[A:B] -> repl
    repl = new[p:len(new) - s]
    spans = [m.span() for m in _TOKEN.finditer(text)]
    if not spans:
        return old, new
    lo = next(i for i, (_, e) in enumerate(spans) if e > A) if len(text) > A else len(spans)
    if A == B:                                               # an insertion: take a neighbour
        lo = max(lo - 1, 0) if lo > 0 else 0
        hi = lo
    else:
        hi = next(i for i, (_, e) in enumerate(spans) if e >= B)
    lo, hi = min(lo, len(spans) - 1), min(hi, len(spans) - 1)
    def stays(i: int) -> bool:  # token i exists and does not leave the line
        return 0 <= i < len(spans) and "\n" not in text[spans[i][0]:spans[i][1]]

    right = True
    while True:
        a, b = min(spans[lo][0], A), max(spans[hi][1], B)
        snippet = text[a:b]
        if snippet.strip() == snippet and snippet and text.count(snippet) == 1:
            return snippet, text[a:A] + repl + text[B:b]
        if lo == 0 and hi == len(spans) - 1:
            return old, new
        # Never stop on whitespace; prefer growing within the line; else alternate sides.
        if snippet != snippet.rstrip() and hi < len(spans) - 1:
            hi += 1
        elif snippet != snippet.lstrip() and lo > 0:
            lo -= 1
        elif stays(hi + 1) != stays(lo - 1):
            hi, lo = (hi + 1, lo) if stays(hi + 1) else (hi, lo - 1)
        elif (right and hi < len(spans) - 1) or lo == 0:
            hi += 1
        else:
            lo -= 1
        right = not right


def _functions(tree: ast.AST) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    out[name] = child
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def _changed_lines(before: str, after: str) -> list[int]:
    """1-based line numbers of `after` that the change before -> after touched."""
    a, b = before.splitlines(), after.splitlines()
    lines: list[int] = []
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            lines.extend(range(j1 + 1, max(j2, j1 + 1) + 1))
    return lines


def edit_matches_fix(ref: Reference, path: str, before: str, after: str) -> bool:
    """Whether the edit `before -> after` of `path` (original names) is the reference fix or a
    part of it: the file now equals the fixed file, or each changed region equals one of the
    fix's, or every function the edit touched now equals the fixed function (AST, so layout and
    comments do not matter)."""
    if path not in ref.fixed or ref.fixed[path] is None:
        return False
    fixed = ref.fixed[path]
    if after == fixed:
        return True
    b, a, f = before.splitlines(), after.splitlines(), fixed.splitlines()

    def regions(x: list[str], y: list[str]) -> set[tuple[int, int, tuple[str, ...]]]:
        sm = difflib.SequenceMatcher(None, x, y, autojunk=False)
        return {(i1, i2, tuple(y[j1:j2])) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"}

    mine, theirs = regions(b, a), regions(b, f)
    if mine and mine <= theirs:
        return True
    try:
        fa, ff = _functions(ast.parse(after)), _functions(ast.parse(fixed))
    except SyntaxError:
        return False
    touched = set(_changed_lines(before, after))
    hit = [name for name, node in fa.items()
           if touched & set(range(node.lineno, (node.end_lineno or node.lineno) + 1))]
    # Innermost functions only: an outer function contains its nested ones.
    hit = [n for n in hit if not any(o != n and o.startswith(n + ".") for o in hit)]
    if not hit:
        return False
    return all(n in ff and ast.dump(fa[n]) == ast.dump(ff[n]) for n in hit)


def first_edit_right(task: Task, path: str, before: str, after: str) -> bool | None:
    """Whether the episode's first applied edit (`path`: before -> after, original names) was
    (part of) the reference fix; None for question tasks, tasks without a fix, or when the
    reference cannot be built (bookkeeping: it must not cost the episode)."""
    if task.kind != "fix" or not task.fix:
        return None
    try:
        ref = reference(task)
    except Exception as e:  # noqa: BLE001 - the reference is bookkeeping, never the episode's end
        log.warning("%s: reference fix unavailable: %s", task.id, e)
        return None
    if ref is None:
        return None
    return edit_matches_fix(ref, path, before, after)

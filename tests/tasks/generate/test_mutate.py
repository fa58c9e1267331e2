"""Mutation operators: each makes the intended one-site change, leaves the rest of the file
byte-identical, and its blind repair inverts a mutant at the family's first site."""
from __future__ import annotations

import ast
import difflib
import functools

import pytest

from fixrl.tasks.generate.mutate import OPERATORS, list_functions, mutants, repair

SOURCE = '''\
"""A module with comments and odd formatting that must survive mutation."""
import math

LIMIT = 10  # not inside any function


def spread(values, width):
    # running windows, with a comment
    out = []
    for i in range(len(values) - width + 1):
        out.append(sum(values[i:i + width]))   # odd spacing kept
    return out


def pick(a, b, flag):
    if not flag and a < b:
        return max(a, b)
    return min(a,  b) * 2


def total(xs):
    acc = 0
    for x in xs:
        acc += x
    return acc


def first_big(xs, limit):
    if not xs:
        return None
    for x in xs:
        if x >= limit or x == -1:
            return x
    return -1


class Box:
    def scaled(self, k):
        return divmod(self.size, k)[0] // 2


def tail():
    return "unchanged"  # trailing comment
'''


def changed(old: str, new: str) -> tuple[list[str], list[str]]:
    removed, added = [], []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line.startswith("-") and not line.startswith("---"):
            removed.append(line[1:])
        elif line.startswith("+") and not line.startswith("+++"):
            added.append(line[1:])
    return removed, added


@functools.cache
def all_mutants(function: str) -> tuple:
    return tuple(mutants(SOURCE, function))


def only(op: str, function: str) -> list:
    return [m for m in all_mutants(function) if m.op == op]


def outside_function_identical(new: str, function: str) -> bool:
    info = next(i for i in list_functions(SOURCE) if i.qualname == function)
    old_lines, new_lines = SOURCE.splitlines(keepends=True), new.splitlines(keepends=True)
    head = old_lines[: info.lineno - 1]
    old_tail = old_lines[info.end_lineno:]
    return new_lines[: len(head)] == head and new_lines[len(new_lines) - len(old_tail):] == old_tail


@pytest.mark.parametrize("op,function,before,after", [
    ("flip_comparison", "pick", "    if not flag and a < b:", "    if not flag and a <= b:"),
    ("flip_comparison", "first_big", "        if x >= limit or x == -1:", "        if x > limit or x == -1:"),
    ("off_by_one", "spread", "    for i in range(len(values) - width + 1):", "    for i in range(len(values) - width):"),
    ("off_by_one", "spread", "        out.append(sum(values[i:i + width]))   # odd spacing kept",
     "        out.append(sum(values[i + 1:i + width]))   # odd spacing kept"),
    ("swap_minmax", "pick", "        return max(a, b)", "        return min(a, b)"),
    ("wrong_arith", "total", "        acc += x", "        acc -= x"),
    ("wrong_arith", "pick", "    return min(a,  b) * 2", "    return min(a,  b) / 2"),
    ("wrong_arith", "Box.scaled", "        return divmod(self.size, k)[0] // 2", "        return divmod(self.size, k)[0] % 2"),
    ("wrong_bool", "pick", "    if not flag and a < b:", "    if not flag or a < b:"),
    ("drop_negation", "pick", "    if not flag and a < b:", "    if flag and a < b:"),
    ("wrong_init", "total", "    acc = 0", "    acc = 1"),
    ("wrong_init", "spread", "    out = []", "    out = [0]"),
    ("swap_args", "Box.scaled", "        return divmod(self.size, k)[0] // 2", "        return divmod(k, self.size)[0] // 2"),
    ("change_constant", "pick", "    return min(a,  b) * 2", "    return min(a,  b) * 3"),
])
def test_operator_makes_intended_change(op, function, before, after):
    found = [m for m in only(op, function) if changed(SOURCE, m.source) == ([before], [after])]
    assert found, f"{op} on {function}: no mutant turns {before!r} into {after!r}; got " + \
        repr([changed(SOURCE, m.source) for m in only(op, function)])
    m = found[0]
    assert m.op == op and op in m.description
    assert SOURCE.splitlines()[m.lineno - 1] == before
    assert outside_function_identical(m.source, function)


def test_early_return_moves_return_into_loop():
    (m,) = only("early_return", "total")
    assert changed(SOURCE, m.source) == (["    return acc"], ["        return acc"])
    assert "        acc += x\n        return acc\n" in m.source


def test_drop_return_removes_guard():
    (m,) = only("drop_return", "first_big")
    assert changed(SOURCE, m.source) == (["    if not xs:", "        return None"], [])


def test_every_mutant_is_one_function_and_parses():
    for info in list_functions(SOURCE):
        for m in all_mutants(info.qualname):
            assert m.op in OPERATORS
            ast.parse(m.source)
            assert m.source != SOURCE
            assert outside_function_identical(m.source, info.qualname), (m.description, info.qualname)
            removed, added = changed(SOURCE, m.source)
            assert 1 <= len(removed) + len(added) <= 4, m.description


def test_mutants_are_unique_and_deterministic():
    first = mutants(SOURCE, "first_big")
    assert len({m.source for m in first}) == len(first)
    assert [m.source for m in first] == [m.source for m in mutants(SOURCE, "first_big")]


def test_untouched_function_text_stays_byte_identical():
    # tail() is never mutated, and its comment survives every mutant of the other functions
    for info in list_functions(SOURCE):
        for m in all_mutants(info.qualname):
            assert 'def tail():\n    return "unchanged"  # trailing comment\n' in m.source
            assert m.source.startswith('"""A module with comments')


@pytest.mark.parametrize("function", ["spread", "pick", "total", "first_big", "Box.scaled"])
def test_repair_inverts_mutant_at_first_site(function):
    checked = 0
    for op in OPERATORS:
        ms = only(op, function)
        if not ms or op == "drop_return":
            continue
        first = min(ms, key=lambda m: m.lineno)
        fixed = repair(first.source, function, op)
        if fixed == SOURCE:
            checked += 1
    assert checked >= 2


def test_repair_inverts_involutive_families_everywhere():
    # For families whose move is its own inverse, repairing the first site of a mutant whose
    # bug is at that first site gives the original text back exactly.
    for op in ("flip_comparison", "swap_minmax", "wrong_arith", "wrong_bool", "wrong_init", "early_return",
               "change_constant", "off_by_one"):
        for info in list_functions(SOURCE):
            ms = only(op, info.qualname)
            if ms:
                assert repair(ms[0].source, info.qualname, op) == SOURCE, (op, info.qualname, ms[0].description)


def test_repair_none_when_family_absent():
    assert repair(SOURCE, "tail", "flip_comparison") is None
    assert repair(SOURCE, "first_big", "drop_return") is None
    with pytest.raises(ValueError, match="unknown mutation operator"):
        repair(SOURCE, "tail", "no_such_op")


def test_bad_function_name():
    with pytest.raises(ValueError, match="not found"):
        mutants(SOURCE, "nope")


def test_method_by_bare_name_and_qualified():
    assert [m.source for m in mutants(SOURCE, "scaled")] == [m.source for m in mutants(SOURCE, "Box.scaled")]


def test_parenthesised_when_precedence_needs_it():
    src = "def f(a, b, c):\n    # keep me\n    return a and b or c\n"
    texts = [m.source for m in mutants(src, "f") if m.op == "wrong_bool"]
    # `or` -> `and` would flatten into one `and`; the nested meaning needs parentheses, and the
    # comment (outside the expression) survives
    assert "def f(a, b, c):\n    # keep me\n    return (a and b) and c\n" in texts
    assert "def f(a, b, c):\n    # keep me\n    return (a or b) or c\n" in texts


def test_unicode_columns():
    src = 'def f(s):\n    return "héllo→" + s if len(s) < 3 else s\n'
    (m,) = [m for m in mutants(src, "f") if m.op == "flip_comparison"]
    assert m.source == 'def f(s):\n    return "héllo→" + s if len(s) <= 3 else s\n'


DOUBLE_QUOTED = '''\
def label(kind, n):
    """A label for `n` things of `kind`."""
    names = {"a": "apple", "b": 'it"s'}
    if kind == "fruit" and n > 1:
        return names.get("a", "none") + "s"
    return f"{kind}: {n}" if n >= 0 else "negative " + kind
'''


def test_a_mutated_line_keeps_the_files_quote_style():
    """ast.unparse writes single quotes: in a double-quoted file the bug (and the fix) would
    show by its style alone. A literal holding a double quote keeps its single quotes."""
    import difflib

    from fixrl.tasks.generate.mutate import mutants

    found = mutants(DOUBLE_QUOTED, "label")
    assert len(found) >= 5
    for m in found:
        changed = [line[1:] for line in difflib.unified_diff(DOUBLE_QUOTED.splitlines(), m.source.splitlines(),
                                                             lineterm="", n=0)
                   if line[:1] == "+" and not line.startswith("+++")]
        for line in changed:
            assert line.count("'") == line.count("'it\"s'") * 2, (m.description, line)
    single = DOUBLE_QUOTED.replace('"a"', "'a'").replace('"apple"', "'apple'").replace('"fruit"', "'fruit'") \
        .replace('"none"', "'none'").replace('"s"', "'s'").replace('"negative "', "'negative '")
    for m in mutants(single, "label"):
        assert '"a"' not in m.source and '"fruit"' not in m.source

"""AST mutation operators that plant one small bug in one function (SWE-smith's procedural bugs).

Each operator is a bug *family*: `OPERATORS[name](source, function) -> list[Mutant]` lists every
single-site mutant of that family in the named function. A mutant's source is the whole file
with only the mutated expression (or the moved/removed statement) rewritten: the rest of the
file, comments and formatting included, is byte-identical, so the bug patch is a line or two.
Every mutant is verified by re-parsing: its text must parse to exactly the mutated tree.

`repair(source, function, op)` is the family's *blind* repair: the inverse move at the first
site of that family in the function, without knowing where the bug is. It fixes a task only
when the bug sits at that first site; that is the point (the blind policy's baseline).

This module holds the records, the enumeration and the table of families; where a family can
plant its bug is `mutate_sites`, the moves and the text they splice are `mutate_moves`.

What this does not guarantee: that a mutant changes behaviour (equivalent mutants are found
and dropped by running the tests, in `tasks.generate.search`), nor that a mutant is type-correct.
"""
from __future__ import annotations

import ast
import copy
import functools
from dataclasses import dataclass
from typing import Callable

from fixrl.tasks.generate.mutate_moves import (
    MutatedTree,
    copy_along,
    move_add_not,
    move_arith,
    move_bool,
    move_const,
    move_const_repair,
    move_drop_guard,
    move_drop_not,
    move_early,
    move_early_repair,
    move_flip,
    move_init,
    move_minmax,
    move_obo,
    move_obo_repair,
    move_swap,
    parse_shared,
    same_tree,
    splice_expr,
    splice_function,
    split_lines,
    text_index,
)
from fixrl.tasks.generate.mutate_sites import (
    ARITH,
    FLIP,
    args_sites,
    arith_sites,
    bool_sites,
    bump,
    condition_sites,
    constant_repair_sites,
    constant_sites,
    early_sites,
    find_function,
    flip_sites,
    guard_sites,
    init_sites,
    init_value,
    loop_ending_in_return,
    minmax_sites,
    not_sites,
    obo_mutate,
    obo_sites,
    op_symbol,
    parent_map,
    replace_child,
)

__all__ = ["Mutant", "OPERATORS", "mutants", "repair", "list_functions", "FunctionInfo"]


@dataclass(frozen=True)
class Mutant:
    op: str
    """The family (operator) name, e.g. `flip_comparison`."""
    source: str
    """The whole file with the bug planted."""
    lineno: int
    """Line (1-based, in the original file) of the mutated site."""
    description: str
    """A short note for reports (never shown to an agent): what changed."""


@dataclass(frozen=True)
class FunctionInfo:
    qualname: str
    """`name` for a module-level function, `Class.name` for a method."""
    name: str
    lineno: int
    end_lineno: int


# ---------------------------------------------------------------------------------------------
# Finding functions and walking them


def list_functions(source: str) -> list[FunctionInfo]:
    """Module-level functions and methods of module-level classes (nested functions excluded)."""
    tree = ast.parse(source)
    out: list[FunctionInfo] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append(FunctionInfo(prefix + node.name, node.name, node.lineno, node.end_lineno or node.lineno))
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")

    visit(tree.body, "")
    return out


# ---------------------------------------------------------------------------------------------
# The generic machinery: apply one move at one site on a private copy, splice, verify

@dataclass(frozen=True)
class _Sites:
    """One function's sites of one family, found once on the shared tree with their parents:
    each mutant copies the function and maps its site and parent into the copy by identity
    (walking a large function again for every mutant was most of the generator's scan)."""

    tree: ast.Module
    fn: ast.AST
    sites: list
    parents: dict[int, ast.AST]


def _sites(source: str, function: str, find: Callable[[ast.AST], list]) -> _Sites:
    tree = parse_shared(source)
    fn = find_function(tree, function)
    return _Sites(tree, fn, find(fn), parent_map(fn))


def _mutate_at(source: str, function: str, find: Callable[[ast.AST], list], index: int,
               move: Callable[[object, ast.AST, ast.AST, str], object],
               found: _Sites | None = None) -> tuple[str, ast.AST] | None:
    """Apply `move` at the `index`-th site returned by `find`, on a copy (`found`: the sites,
    when the caller has them for several indexes)."""
    found = found or _sites(source, function, find)
    tree, fn = found.tree, found.fn
    orig_site = found.sites[index]
    memo: dict[int, ast.AST] = {}
    copied, new_fn, top = copy_along(tree, fn, memo)
    new_tree = MutatedTree(source, tree, copied, top)
    site = tuple(memo.get(id(x), x) if isinstance(x, ast.AST) else x for x in orig_site) \
        if isinstance(orig_site, tuple) else memo[id(orig_site)]
    node = site[0] if isinstance(site, tuple) else site
    orig_node = orig_site[0] if isinstance(orig_site, tuple) else orig_site
    orig_parent = found.parents.get(id(orig_node))
    parent = new_fn if orig_parent is None else memo[id(orig_parent)]
    result = move(site, parent, new_fn, source)
    if result is None:
        return None
    if callable(result):  # a text move: edit the source the same way
        lines = split_lines(source)
        edited = result(lines)
        if edited is not None and same_tree(new_tree, "".join(edited)):
            return "".join(edited), orig_node
        # an operator edit whose text no longer means the tree (e.g. `a and b or c` -> `a and b
        # and c` flattens): rewrite the expression, parenthesised where needed
        text = splice_expr(source, orig_node, result.node, new_tree) if hasattr(result, "node") else None
        if text is None:
            text = splice_function(source, fn, new_fn, new_tree)
        return (text, orig_node) if text is not None else None
    if result is not node:
        replace_child(parent, node, result)
    text = splice_expr(source, orig_node, result, new_tree)
    if text is None:
        text = splice_function(source, fn, new_fn, new_tree)
    return (text, orig_node) if text is not None else None


def _segment(source: str, node: ast.AST) -> str:
    # ast.get_source_segment's text, without splitting the whole source again for every call
    lines = _line_list(source)
    try:
        start = text_index(lines, node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = text_index(lines, node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        text = source[start:end]
    except (AttributeError, TypeError, IndexError):
        text = ""
    return (text or ast.unparse(node)).strip()


@functools.lru_cache(maxsize=8)
def _line_list(source: str) -> list[str]:
    """`split_lines(source)`, shared: never changed by its callers."""
    return split_lines(source)


def _family(name: str, find: Callable[[ast.AST], list], move, describe) -> Callable[[str, str], list[Mutant]]:
    def enumerate_mutants(source: str, function: str) -> list[Mutant]:
        found = _sites(source, function, find)
        out = []
        for i, site in enumerate(found.sites):
            done = _mutate_at(source, function, find, i, move, found)
            if done is None or done[0] == source:
                continue
            text, node = done
            out.append(Mutant(name, text, node.lineno, f"{name}: {describe(source, site)} (line {node.lineno})"))
        return out

    enumerate_mutants.__name__ = name
    enumerate_mutants.__doc__ = f"Single-site `{name}` mutants of `function` in `source`."
    return enumerate_mutants


def _d_flip(src, site):
    node, i = site
    return f"`{op_symbol(node.ops[i])}` -> `{op_symbol(FLIP[type(node.ops[i])]())}` in `{_segment(src, node)}`"


def _d_op(table):
    def describe(src, node):
        return f"`{op_symbol(node.op)}` -> `{op_symbol(table[type(node.op)]())}` in `{_segment(src, node)}`"
    return describe


FAMILIES: dict[str, tuple] = {
    # name: (find sites, mutation move, describe, repair find, repair move)
    "flip_comparison": (flip_sites, move_flip, _d_flip, flip_sites, move_flip),
    "off_by_one": (obo_sites, move_obo,
                   lambda s, site: (f"`{_segment(s, site[0])}` -> "
                                    f"`{ast.unparse(obo_mutate(copy.deepcopy(site[0]), site[1]))}`"),
                   obo_sites, move_obo_repair),
    "swap_minmax": (minmax_sites, move_minmax, lambda s, n: f"`{n.func.id}` swapped in `{_segment(s, n)}`",
                    minmax_sites, move_minmax),
    "wrong_arith": (arith_sites, move_arith, _d_op(ARITH), arith_sites, move_arith),
    "wrong_bool": (bool_sites, move_bool, lambda s, n: f"`{op_symbol(n.op)}` swapped in `{_segment(s, n)}`",
                   bool_sites, move_bool),
    "drop_negation": (not_sites, move_drop_not, lambda s, n: f"`not` dropped from `{_segment(s, n)}`",
                      condition_sites, move_add_not),
    "wrong_init": (init_sites, move_init,
                   lambda s, n: f"initial value `{_segment(s, n)}` -> `{ast.unparse(init_value(n))}`",
                   init_sites, move_init),
    "swap_args": (args_sites, move_swap,
                  lambda s, site: f"arguments {site[1] + 1} and {site[1] + 2} swapped in `{_segment(s, site[0])}`",
                  args_sites, move_swap),
    "early_return": (early_sites, move_early, lambda s, n: f"`{_segment(s, n)}` moved into the loop above it",
                     loop_ending_in_return, move_early_repair),
    "drop_return": (guard_sites, move_drop_guard,
                    lambda s, n: f"guard `if {_segment(s, n.test)}: {_segment(s, n.body[0])}` removed", None, None),
    "change_constant": (constant_sites, move_const,
                        lambda s, n: f"constant `{_segment(s, n)}` -> `{ast.unparse(bump(n, +1))}`",
                        constant_repair_sites, move_const_repair),
}

OPERATORS: dict[str, Callable[[str, str], list[Mutant]]] = {
    name: _family(name, find, move, describe) for name, (find, move, describe, _, _) in FAMILIES.items()
}
"""Family name -> `op(source, function) -> list[Mutant]` (single-site mutants of that family)."""


def mutants(source: str, function: str, ops: list[str] | None = None) -> list[Mutant]:
    """Every single-site mutant of `function` (a name, or `Class.method`) in `source`, over the
    families in `ops` (default: all). Duplicates (same resulting text) keep the first family."""
    seen: set[str] = {source}
    out: list[Mutant] = []
    for name in ops or list(OPERATORS):
        if name not in OPERATORS:
            raise ValueError(f"unknown mutation operator {name!r}; known: {', '.join(OPERATORS)}")
        for m in OPERATORS[name](source, function):
            if m.source not in seen:
                seen.add(m.source)
                out.append(m)
    return out


GUESSES: dict[str, tuple[str, str]] = {
    "flip_comparison": (">", ">="),
    "off_by_one": ("(n)", "(n + 1)"),
    "swap_minmax": ("min", "max"),
    "wrong_arith": ("-", "+"),
    "wrong_init": ("= 1", "= 0"),
    "wrong_bool": (" or ", " and "),
    "drop_negation": ("if ", "if not "),
    "change_constant": ("1", "0"),
}
"""What an agent that has not read the code types for a family: the usual fix as an exact-snippet
edit (old, new), right only when the bug happens to be that one (the blind baseline's move when
the family's repair has no site in the function it never looked at)."""


def repair(source: str, function: str, op: str) -> str | None:
    """The blind repair of family `op`: its inverse move at the first site of that family in
    `function`. Returns the whole new source, or None when the family has no site there (or no
    blind repair, like `drop_return`, whose missing guard cannot be guessed)."""
    if op not in FAMILIES:
        raise ValueError(f"unknown mutation operator {op!r}; known: {', '.join(OPERATORS)}")
    find, move = FAMILIES[op][3], FAMILIES[op][4]
    if find is None:
        return None
    try:
        found = _sites(source, function, find)
    except (SyntaxError, ValueError):
        return None
    for i in range(len(found.sites)):
        done = _mutate_at(source, function, find, i, move, found)
        if done is not None and done[0] != source:
            return done[0]
    return None

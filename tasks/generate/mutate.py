"""AST mutation operators that plant one small bug in one function (SWE-smith's procedural bugs).

Each operator is a bug *family*: `OPERATORS[name](source, function) -> list[Mutant]` lists every
single-site mutant of that family in the named function. A mutant's source is the whole file
with only the mutated expression (or the moved/removed statement) rewritten: the rest of the
file, comments and formatting included, is byte-identical, so the bug patch is a line or two.
Every mutant is verified by re-parsing: its text must parse to exactly the mutated tree.

`repair(source, function, op)` is the family's *blind* repair: the inverse move at the first
site of that family in the function, without knowing where the bug is. It fixes a task only
when the bug sits at that first site; that is the point (the blind policy's baseline).

What this does not guarantee: that a mutant changes behaviour (equivalent mutants are found
and dropped by running the tests, in `tasks.generate.pipeline`), nor that a mutant is type-correct.
"""
from __future__ import annotations

import ast
import copy
import functools
import re
from dataclasses import dataclass
from typing import Callable, Iterator

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


def _find_function(tree: ast.Module, function: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    parts = function.split(".")
    body: list[ast.stmt] = tree.body
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if last else (ast.ClassDef,)
        matches = [n for n in body if isinstance(n, kinds) and n.name == part]
        if not matches and last and len(parts) == 1:
            # A bare name may be a method: accept it when exactly one class defines it.
            matches = [m for c in body if isinstance(c, ast.ClassDef) for m in c.body
                       if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == part]
            if len(matches) > 1:
                raise ValueError(f"function {function!r} is defined in several classes; "
                                 f"name it as Class.{function}")
        if not matches:
            raise ValueError(f"function {function!r} not found (module-level functions and "
                             f"methods as Class.method)")
        node = matches[-1]  # the last definition wins at import time
        if last:
            return node  # type: ignore[return-value]
        body = node.body  # type: ignore[attr-defined]
    raise AssertionError("unreachable")


def _walk(fn: ast.AST) -> list[ast.AST]:
    """The function body's nodes in a deterministic pre-order (decorators, arguments excluded)."""
    out: list[ast.AST] = []

    def rec(node: ast.AST) -> None:
        out.append(node)
        for child in ast.iter_child_nodes(node):
            rec(child)

    for stmt in fn.body:  # type: ignore[attr-defined]
        rec(stmt)
    return out


def _parents(fn: ast.AST) -> dict[int, ast.AST]:
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(fn):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


def _docstring_node(fn: ast.AST) -> ast.AST | None:
    body = fn.body  # type: ignore[attr-defined]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[0].value
    return None


def _order(nodes: list[ast.AST]) -> list[ast.AST]:
    return sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


# ---------------------------------------------------------------------------------------------
# Text splicing: change only the mutated span, then prove the text means the mutated tree

_LINE = re.compile(r".*?(?:\r\n|\r|\n)|.+\Z", re.S)


def _lines(source: str) -> list[str]:
    return _LINE.findall(source)


def _index(lines: list[str], lineno: int, col: int) -> int:
    """String index of (1-based line, UTF-8 byte column), as ast reports positions."""
    before = sum(len(line) for line in lines[: lineno - 1])
    return before + len(lines[lineno - 1].encode("utf-8")[:col].decode("utf-8", "replace"))


def _same(tree: ast.AST, text: str) -> bool:
    if isinstance(tree, _Target):
        return tree.matches(text)
    try:
        return ast.dump(ast.parse(text)) == ast.dump(tree)
    except SyntaxError:
        return False


@functools.lru_cache(maxsize=8)
def _parse(source: str) -> ast.Module:
    """The source's tree, parsed once for all its mutants: shared, so never changed (moves
    work on `_copy_along`'s copies)."""
    return ast.parse(source)


def _copy_along(tree: ast.Module, fn: ast.AST) -> tuple[ast.Module, ast.AST, int]:
    """A copy of `tree` in which only `fn` (deeply) and the module and classes holding it
    (shallowly) are new: (the copy, fn's copy, the index of the top-level statement holding it).
    Copying the whole module per mutant cost more than everything else the mutants need."""

    def path(body: list[ast.stmt]) -> list[int] | None:
        for i, node in enumerate(body):
            if node is fn:
                return [i]
            if isinstance(node, ast.ClassDef):
                rest = path(node.body)
                if rest is not None:
                    return [i, *rest]
        return None

    steps = path(tree.body)
    if steps is None:
        raise ValueError("function not found in its module")
    new_tree = copy.copy(tree)
    holder: ast.AST = new_tree
    new_tree.body = list(tree.body)
    for i in steps[:-1]:
        cls = copy.copy(holder.body[i])  # type: ignore[attr-defined]
        cls.body = list(cls.body)
        holder.body[i] = cls  # type: ignore[attr-defined]
        holder = cls
    new_fn = copy.deepcopy(fn)
    holder.body[steps[-1]] = new_fn  # type: ignore[attr-defined]
    return new_tree, new_fn, steps[0]


class _Target:
    """A mutated module tree (`tree`) and a fast test that a text means it. The mutant texts
    differ from the source only inside the top-level statement that holds the function; when
    a text keeps the source's lines before and after that statement, those lines parse as before,
    so only the statement's own lines are parsed and compared. Any other text gets the full
    comparison."""

    def __init__(self, source: str, tree: ast.Module, new_tree: ast.Module, top: int) -> None:
        self.tree = new_tree
        stmt = tree.body[top]
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        lines = _lines(source)
        self.head = "".join(lines[: first - 1])
        self.tail = "".join(lines[stmt.end_lineno:])  # type: ignore[misc]
        self.top = top
        self._want: str | None = None

    def matches(self, text: str) -> bool:
        """Whether `text` parses to `tree` (as it is now: the move has changed it since __init__)."""
        if self._want is None:
            self._want = ast.dump(self.tree.body[self.top])
        h, t = len(self.head), len(self.tail)
        if len(text) >= h + t and text.startswith(self.head) and text.endswith(self.tail):
            try:
                region = ast.parse(text[h:len(text) - t])
            except SyntaxError:
                region = None
            if region is not None and len(region.body) == 1 and ast.dump(region.body[0]) == self._want:
                return True
        return _same(self.tree, text)


def _splice_expr(source: str, old: ast.AST, new: ast.AST, tree: ast.AST) -> str | None:
    lines = _lines(source)
    start = _index(lines, old.lineno, old.col_offset)  # type: ignore[attr-defined]
    end = _index(lines, old.end_lineno, old.end_col_offset)  # type: ignore[attr-defined]
    code = ast.unparse(new)
    for text in (code, f"({code})"):
        candidate = source[:start] + text + source[end:]
        if _same(tree, candidate):
            return candidate
    return None


def _splice_function(source: str, fn_old: ast.AST, fn_new: ast.AST, tree: ast.AST) -> str | None:
    """Fallback: rewrite the whole function with ast.unparse (loses its comments)."""
    lines = _lines(source)
    first = min([fn_old.lineno] + [d.lineno for d in fn_old.decorator_list])  # type: ignore[attr-defined]
    indent = re.match(r"[ \t]*", lines[first - 1]).group(0)  # type: ignore[union-attr]
    newline = "\n"
    body = "".join(indent + line + newline if line else newline for line in ast.unparse(fn_new).split("\n"))
    candidate = "".join(lines[: first - 1]) + body + "".join(lines[fn_old.end_lineno:])  # type: ignore[attr-defined]
    return candidate if _same(tree, candidate) else None


def _alone_on_lines(lines: list[str], node: ast.stmt) -> bool:
    head = lines[node.lineno - 1].encode("utf-8")[: node.col_offset].decode("utf-8", "replace")
    tail = lines[node.end_lineno - 1].encode("utf-8")[node.end_col_offset:].decode("utf-8", "replace")  # type: ignore[operator]
    return head.strip() == "" and (tail.strip() == "" or tail.strip().startswith("#"))


# ---------------------------------------------------------------------------------------------
# The moves. A move gets (node in a private copy of the tree, its parent) and changes the copy.
# Expression moves return the replacement expression; statement moves edit the parent's body
# and return a text edit `lines -> lines` that does the same to the source.

@dataclass
class _Site:
    node: ast.AST
    description: str


Move = Callable[[ast.AST, ast.AST], "ast.AST | Callable[[list[str]], list[str] | None] | None"]


def _sym(op: ast.AST) -> str:
    return {
        ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
        ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
        ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
        ast.And: "and", ast.Or: "or",
    }.get(type(op), type(op).__name__)


def _replace_child(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list):
            for i, item in enumerate(value):
                if item is old:
                    value[i] = new
                    return
    raise AssertionError("child not found in parent")


def _int_const(node: ast.AST) -> int | None:
    """The value of an int literal, including a negated one (`-1`); None otherwise."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    return None


def _int_node(value: int) -> ast.AST:
    return ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0 else ast.Constant(value)


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name):
            return node.func.id
        if isinstance(node.func, ast.Attribute):
            return node.func.attr
    return None


# --- flip_comparison: `<`<->`<=`, `>`<->`>=`, `==`<->`!=`, `in`<->`not in`, `is`<->`is not`
_FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
         ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def _flip_sites(fn: ast.AST) -> list[tuple[ast.AST, int]]:
    return [(n, i) for n in _order([n for n in _walk(fn) if isinstance(n, ast.Compare)])
            for i, op in enumerate(n.ops) if type(op) in _FLIP]  # type: ignore[attr-defined]


# --- off_by_one: range bounds, slice bounds, integer-like indices, one step off
_INDEX_NAMES = {"i", "j", "k", "n", "m", "idx", "index", "mid", "pos", "lo", "hi", "start", "end",
                "stop", "left", "right", "first", "last", "width", "size", "count", "offset"}


def _obo_sites(fn: ast.AST) -> list[tuple[ast.AST, int]]:
    """(expression, direction): the direction is where an off-by-one error typically goes."""
    out: list[tuple[ast.AST, int]] = []
    for node in _walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" \
                and not node.keywords and 1 <= len(node.args) <= 3 \
                and not any(isinstance(a, ast.Starred) for a in node.args):
            if len(node.args) == 1:
                out.append((node.args[0], -1))
            else:
                out.append((node.args[0], +1))
                out.append((node.args[1], -1))
        elif isinstance(node, ast.Subscript):
            sl = node.slice
            if isinstance(sl, ast.Slice):
                if sl.lower is not None:
                    out.append((sl.lower, +1))
                if sl.upper is not None:
                    out.append((sl.upper, -1))
            elif _int_const(sl) is not None or _plus_minus_one(sl) is not None or \
                    (isinstance(sl, ast.Name) and sl.id in _INDEX_NAMES) or \
                    (isinstance(sl, ast.BinOp) and isinstance(sl.op, (ast.Add, ast.Sub, ast.FloorDiv))):
                out.append((sl, +1))
    return [(n, d) for n, d in _order_pairs(out)]


def _order_pairs(pairs: list[tuple[ast.AST, int]]) -> list[tuple[ast.AST, int]]:
    return sorted(pairs, key=lambda p: (p[0].lineno, p[0].col_offset))  # type: ignore[attr-defined]


def _plus_minus_one(node: ast.AST) -> ast.AST | None:
    """`X + 1` or `X - 1` -> X; None for anything else."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) \
            and isinstance(node.right, ast.Constant) and type(node.right.value) is int and node.right.value == 1:
        return node.left
    return None


def _obo_mutate(node: ast.AST, direction: int) -> ast.AST:
    inner = _plus_minus_one(node)
    if inner is not None:
        return inner
    k = _int_const(node)
    if k is not None:
        return _int_node(k + 1 if k >= 0 else k - 1)
    return ast.BinOp(node, ast.Add() if direction > 0 else ast.Sub(), ast.Constant(1))


def _obo_repair(node: ast.AST, direction: int) -> ast.AST | None:
    inner = _plus_minus_one(node)
    if inner is not None:
        return inner
    k = _int_const(node)
    if k is not None:
        if k > 0:
            return _int_node(k - 1)
        if k < -1:
            return _int_node(k + 1)
        return None
    return ast.BinOp(node, ast.Sub() if direction > 0 else ast.Add(), ast.Constant(1))


# --- swap_minmax
def _minmax_sites(fn: ast.AST) -> list[ast.AST]:
    return _order([n for n in _walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                   and n.func.id in ("min", "max")])


# --- wrong_arith: + <-> -, * <-> /, // <-> %
_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
          ast.FloorDiv: ast.Mod, ast.Mod: ast.FloorDiv}


def _is_texty(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))) or \
        isinstance(node, (ast.JoinedStr, ast.List, ast.Tuple, ast.ListComp))


def _arith_sites(fn: ast.AST) -> list[ast.AST]:
    out = []
    for n in _walk(fn):
        if isinstance(n, ast.BinOp) and type(n.op) in _ARITH and not (_is_texty(n.left) or _is_texty(n.right)):
            # `"%s" % x` is formatting, not arithmetic.
            if isinstance(n.op, ast.Mod) and isinstance(n.left, ast.Constant) and isinstance(n.left.value, str):
                continue
            out.append(n)
        elif isinstance(n, ast.AugAssign) and type(n.op) in _ARITH and not _is_texty(n.value):
            out.append(n)
    return _order(out)


# --- wrong_bool
def _bool_sites(fn: ast.AST) -> list[ast.AST]:
    return _order([n for n in _walk(fn) if isinstance(n, ast.BoolOp)])


# --- drop_negation: `not x` -> `x`; its blind repair negates the first condition
def _not_sites(fn: ast.AST) -> list[ast.AST]:
    return _order([n for n in _walk(fn) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)])


def _condition_sites(fn: ast.AST) -> list[ast.AST]:
    return _order([n.test for n in _walk(fn) if isinstance(n, (ast.If, ast.While, ast.IfExp))])


# --- wrong_init: the initial value of an accumulator
def _init_value(node: ast.AST) -> ast.AST | None:
    """The mutated initial value (an involution: applying it twice gives the original back)."""
    if isinstance(node, ast.Constant):
        v = node.value
        if v is True or v is False:
            return ast.Constant(not v)
        if type(v) is int and v in (0, 1):
            return ast.Constant(1 - v)
        if type(v) is float and v in (0.0, 1.0):
            return ast.Constant(1.0 - v)
        if v == "":
            return ast.Constant(" ")
        if v == " ":
            return ast.Constant("")
        return None
    if isinstance(node, ast.List) and not node.elts:
        return ast.List([ast.Constant(0)], ast.Load())
    if isinstance(node, ast.List) and len(node.elts) == 1 and isinstance(node.elts[0], ast.Constant) \
            and node.elts[0].value == 0 and type(node.elts[0].value) is int:
        return ast.List([], ast.Load())
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" \
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
            and node.args[0].value in ("inf", "-inf", "+inf"):
        flipped = "-inf" if node.args[0].value in ("inf", "+inf") else "inf"
        return ast.Call(ast.Name("float", ast.Load()), [ast.Constant(flipped)], [])
    return None


def _accumulators(fn: ast.AST) -> set[str]:
    """Names updated after their first assignment: augmented, reassigned, appended to, indexed."""
    assigned: dict[str, int] = {}
    updated: set[str] = set()
    for n in _walk(fn):
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            updated.add(n.target.id)
        elif isinstance(n, ast.Assign):
            for t in n.targets:
                for name in ast.walk(t):
                    if isinstance(name, ast.Name):
                        assigned[name.id] = assigned.get(name.id, 0) + 1
                    if isinstance(name, ast.Subscript) and isinstance(name.value, ast.Name):
                        updated.add(name.value.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                and n.func.attr in ("append", "extend", "add", "insert", "update", "appendleft"):
            updated.add(n.func.value.id)
    return updated | {k for k, v in assigned.items() if v > 1}


def _init_sites(fn: ast.AST) -> list[ast.AST]:
    accs = _accumulators(fn)
    return _order([n.value for n in _walk(fn) if isinstance(n, ast.Assign) and len(n.targets) == 1
                   and isinstance(n.targets[0], ast.Name) and n.targets[0].id in accs
                   and _init_value(n.value) is not None])


# --- swap_args: two adjacent positional arguments of a call
_NO_SWAP = {"min", "max", "print", "isinstance", "issubclass", "getattr", "setattr", "hasattr", "super",
            "set", "frozenset", "any", "all", "sum", "len"}


def _args_sites(fn: ast.AST) -> list[tuple[ast.AST, int]]:
    out = []
    for n in _order([n for n in _walk(fn) if isinstance(n, ast.Call)]):
        if _call_name(n) in _NO_SWAP or any(isinstance(a, ast.Starred) for a in n.args):  # type: ignore[attr-defined]
            continue
        for i in range(len(n.args) - 1):  # type: ignore[attr-defined]
            if ast.dump(n.args[i]) != ast.dump(n.args[i + 1]):  # type: ignore[attr-defined]
                out.append((n, i))
    return out


# --- early_return: the `return` after a loop moved into the loop's body (it runs once)
def _bodies(fn: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement list in the function (bodies, else branches, finally blocks, handlers)."""
    yield fn.body  # type: ignore[attr-defined]
    for n in _walk(fn):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(n, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield value


def _early_sites(fn: ast.AST) -> list[ast.AST]:
    out = []
    for body in _bodies(fn):
        for prev, stmt in zip(body, body[1:]):
            if isinstance(stmt, ast.Return) and isinstance(prev, (ast.For, ast.While, ast.AsyncFor)) \
                    and not prev.orelse and not isinstance(prev.body[-1], (ast.Return, ast.Raise)):
                out.append(stmt)
    return _order(out)


def _loop_ending_in_return(fn: ast.AST) -> list[ast.AST]:
    return _order([n for n in _walk(fn) if isinstance(n, (ast.For, ast.While, ast.AsyncFor))
                   and isinstance(n.body[-1], ast.Return) and len(n.body) > 1 and not n.orelse])


# --- drop_return: a guard clause `if cond: return x` removed
def _guard_sites(fn: ast.AST) -> list[ast.AST]:
    out = []
    for body in _bodies(fn):
        if len(body) < 2:
            continue
        for stmt in body[:-1]:
            if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 \
                    and isinstance(stmt.body[0], ast.Return):
                out.append(stmt)
    return _order(out)


# --- change_constant: a numeric literal one step off
def _constant_sites(fn: ast.AST) -> list[ast.AST]:
    skip: set[int] = {id(_docstring_node(fn))}
    skip |= {id(n) for n in _init_sites(fn)}
    for node, _ in _obo_sites(fn):
        skip.add(id(node))
        for sub in ast.walk(node):
            skip.add(id(sub))
    out = []
    parents = _parents(fn)
    for n in _walk(fn):
        if isinstance(n, ast.Constant) and type(n.value) in (int, float) and id(n) not in skip:
            parent = parents.get(id(n))
            if isinstance(parent, ast.UnaryOp) and id(parent) in skip:
                continue
            out.append(n)
    return _order(out)


def _constant_repair_sites(fn: ast.AST) -> list[ast.AST]:
    # A mutant's constant is at least 1 (k -> k + 1 from k >= 0), so smaller ones are not candidates.
    return [n for n in _constant_sites(fn) if n.value >= 1]  # type: ignore[attr-defined]


def _bump(node: ast.Constant, sign: int) -> ast.AST:
    step = 1 if type(node.value) is int else 1.0
    return ast.Constant(node.value + sign * step)


# ---------------------------------------------------------------------------------------------
# The generic machinery: apply one move at one site on a private copy, splice, verify

def _mutate_at(source: str, function: str, find: Callable[[ast.AST], list], index: int,
               move: Callable[[object, ast.AST, ast.AST, str], object]) -> tuple[str, ast.AST] | None:
    """Apply `move` at the `index`-th site returned by `find` (re-found on a copy)."""
    tree = _parse(source)
    fn = _find_function(tree, function)
    orig_site = find(fn)[index]
    copied, new_fn, top = _copy_along(tree, fn)
    new_tree = _Target(source, tree, copied, top)
    site = find(new_fn)[index]
    node = site[0] if isinstance(site, tuple) else site
    orig_node = orig_site[0] if isinstance(orig_site, tuple) else orig_site
    parent = _parents(new_fn).get(id(node), new_fn)
    result = move(site, parent, new_fn, source)
    if result is None:
        return None
    if callable(result):  # a text move: edit the source the same way
        lines = _lines(source)
        edited = result(lines)
        if edited is not None and _same(new_tree, "".join(edited)):
            return "".join(edited), orig_node
        # an operator edit whose text no longer means the tree (e.g. `a and b or c` -> `a and b
        # and c` flattens): rewrite the expression, parenthesised where needed
        text = _splice_expr(source, orig_node, result.node, new_tree) if hasattr(result, "node") else None
        if text is None:
            text = _splice_function(source, fn, new_fn, new_tree)
        return (text, orig_node) if text is not None else None
    if result is not node:
        _replace_child(parent, node, result)
    text = _splice_expr(source, orig_node, result, new_tree)
    if text is None:
        text = _splice_function(source, fn, new_fn, new_tree)
    return (text, orig_node) if text is not None else None


def _segment(source: str, node: ast.AST) -> str:
    # ast.get_source_segment's text, without splitting the whole source again for every call
    lines = _line_list(source)
    try:
        start = _index(lines, node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = _index(lines, node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        text = source[start:end]
    except (AttributeError, TypeError, IndexError):
        text = ""
    return (text or ast.unparse(node)).strip()


@functools.lru_cache(maxsize=8)
def _line_list(source: str) -> list[str]:
    """`_lines(source)`, shared: never changed by its callers."""
    return _lines(source)


def _family(name: str, find: Callable[[ast.AST], list], move, describe) -> Callable[[str, str], list[Mutant]]:
    def enumerate_mutants(source: str, function: str) -> list[Mutant]:
        tree = _parse(source)
        sites = find(_find_function(tree, function))
        out = []
        for i, site in enumerate(sites):
            done = _mutate_at(source, function, find, i, move)
            if done is None or done[0] == source:
                continue
            text, node = done
            out.append(Mutant(name, text, node.lineno, f"{name}: {describe(source, site)} (line {node.lineno})"))
        return out

    enumerate_mutants.__name__ = name
    enumerate_mutants.__doc__ = f"Single-site `{name}` mutants of `function` in `source`."
    return enumerate_mutants


def _set_op(node: ast.AST, table: dict) -> ast.AST:
    node.op = table[type(node.op)]()  # type: ignore[attr-defined]
    return node


def _gap_edit(source: str, left: ast.AST, right: ast.AST, old: str, new: str, fallback: ast.AST, orig: ast.AST):
    """Rewrite only the operator between two operands (parentheses, spacing and comments kept);
    if the gap holds anything unexpected, fall back to re-writing the whole expression."""

    def edit(lines: list[str]) -> list[str] | None:
        text = "".join(lines)
        start = _index(lines, left.end_lineno, left.end_col_offset)  # type: ignore[attr-defined]
        end = _index(lines, right.lineno, right.col_offset)  # type: ignore[attr-defined]
        gap = text[start:end]
        pattern = r"\b" + re.escape(old).replace(r"\ ", r"\s+") + r"\b" if old[0].isalpha() \
            else r"(?<![<>=!*/%+\-])" + re.escape(old) + r"(?![<>=*/])"
        code = gap.split("#", 1)[0] if "\n" not in gap else gap
        if len(re.findall(pattern, code)) != 1:
            return _lines(_splice_expr_text(text, orig, fallback))
        gap = re.sub(pattern, new, gap, count=1)
        return _lines(text[:start] + gap + text[end:])

    edit.node = fallback  # type: ignore[attr-defined]
    return edit


def _splice_expr_text(source: str, old: ast.AST, new: ast.AST) -> str:
    lines = _lines(source)
    start = _index(lines, old.lineno, old.col_offset)  # type: ignore[attr-defined]
    end = _index(lines, old.end_lineno, old.end_col_offset)  # type: ignore[attr-defined]
    return source[:start] + ast.unparse(new) + source[end:]


def _move_flip(site, parent, fn, source):
    node, i = site
    old = _sym(node.ops[i])
    node.ops[i] = _FLIP[type(node.ops[i])]()
    left = node.left if i == 0 else node.comparators[i - 1]
    return _gap_edit(source, left, node.comparators[i], old, _sym(node.ops[i]), node, node)


def _move_minmax(node, parent, fn, source):
    node.func.id = "max" if node.func.id == "min" else "min"
    return node


def _move_arith(node, parent, fn, source):
    old = _sym(node.op)
    _set_op(node, _ARITH)
    if isinstance(node, ast.AugAssign):
        return _gap_edit(source, node.target, node.value, old + "=", _sym(node.op) + "=", node, node)
    return _gap_edit(source, node.left, node.right, old, _sym(node.op), node, node)


def _move_bool(node, parent, fn, source):
    old = _sym(node.op)
    node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    edits = [(a, b) for a, b in zip(node.values, node.values[1:])]

    def edit(lines: list[str]) -> list[str] | None:
        # Every `and` of the BoolOp becomes `or` (one BoolOp is one operator); last gap first.
        for a, b in reversed(edits):
            lines = _gap_edit("".join(lines), a, b, old, _sym(node.op), node, node)(lines)
            if lines is None:
                return None
        return lines

    edit.node = node  # type: ignore[attr-defined]
    return edit


def _move_drop_not(node, parent, fn, source):
    return node.operand


def _move_add_not(node, parent, fn, source):
    return ast.UnaryOp(ast.Not(), node)


def _move_init(node, parent, fn, source):
    return _init_value(node)


def _move_swap(site, parent, fn, source):
    node, i = site
    node.args[i], node.args[i + 1] = node.args[i + 1], node.args[i]
    return node


def _move_obo(site, parent, fn, source):
    return _obo_mutate(*site)


def _move_obo_repair(site, parent, fn, source):
    return _obo_repair(*site)


def _move_const(node, parent, fn, source):
    return _bump(node, +1)


def _move_const_repair(node, parent, fn, source):
    return _bump(node, -1)


def _reindent(block: list[str], old: str, new: str) -> list[str] | None:
    out = []
    for line in block:
        if line.strip() == "":
            out.append(line)
        elif line.startswith(old):
            out.append(new + line[len(old):])
        else:
            return None
    return out


def _indent_of(lines: list[str], lineno: int) -> str:
    return re.match(r"[ \t]*", lines[lineno - 1]).group(0)  # type: ignore[union-attr]


def _move_early(node, parent, fn, source):
    """Move the `return` that follows a loop to the end of the loop's body."""
    body = next(b for b in _bodies(fn) if any(s is node for s in b))
    i = next(k for k, s in enumerate(body) if s is node)
    loop = body[i - 1]
    del body[i]
    loop.body.append(node)
    ret_lines = (node.lineno, node.end_lineno)
    loop_end, body_line = loop.end_lineno, loop.body[0].lineno

    def edit(lines: list[str]) -> list[str] | None:
        if not _alone_on_lines(lines, node):
            return None
        block = lines[ret_lines[0] - 1: ret_lines[1]]
        moved = _reindent(block, _indent_of(lines, ret_lines[0]), _indent_of(lines, body_line))
        if moved is None:
            return None
        rest = lines[: ret_lines[0] - 1] + lines[ret_lines[1]:]
        return rest[:loop_end] + moved + rest[loop_end:]

    return edit


def _move_early_repair(loop, parent, fn, source):
    """Move the `return` that ends a loop's body to just after the loop."""
    body = next(b for b in _bodies(fn) if any(s is loop for s in b))
    i = next(k for k, s in enumerate(body) if s is loop)
    ret = loop.body.pop()
    body.insert(i + 1, ret)
    ret_lines, loop_line = (ret.lineno, ret.end_lineno), loop.lineno

    def edit(lines: list[str]) -> list[str] | None:
        if not _alone_on_lines(lines, ret):
            return None
        block = lines[ret_lines[0] - 1: ret_lines[1]]
        moved = _reindent(block, _indent_of(lines, ret_lines[0]), _indent_of(lines, loop_line))
        if moved is None:
            return None
        rest = lines[: ret_lines[0] - 1] + lines[ret_lines[1]:]
        at = ret_lines[0] - 1  # the loop now ends just before where the return was
        return rest[:at] + moved + rest[at:]

    return edit


def _move_drop_guard(node, parent, fn, source):
    body = next(b for b in _bodies(fn) if any(s is node for s in b))
    body.remove(node)
    span = (node.lineno, node.end_lineno)

    def edit(lines: list[str]) -> list[str] | None:
        if not _alone_on_lines(lines, node):
            return None
        return lines[: span[0] - 1] + lines[span[1]:]

    return edit


def _d_flip(src, site):
    node, i = site
    return f"`{_sym(node.ops[i])}` -> `{_sym(_FLIP[type(node.ops[i])]())}` in `{_segment(src, node)}`"


def _d_op(table):
    def describe(src, node):
        return f"`{_sym(node.op)}` -> `{_sym(table[type(node.op)]())}` in `{_segment(src, node)}`"
    return describe


FAMILIES: dict[str, tuple] = {
    # name: (find sites, mutation move, describe, repair find, repair move)
    "flip_comparison": (_flip_sites, _move_flip, _d_flip, _flip_sites, _move_flip),
    "off_by_one": (_obo_sites, _move_obo,
                   lambda s, site: (f"`{_segment(s, site[0])}` -> "
                                    f"`{ast.unparse(_obo_mutate(copy.deepcopy(site[0]), site[1]))}`"),
                   _obo_sites, _move_obo_repair),
    "swap_minmax": (_minmax_sites, _move_minmax, lambda s, n: f"`{n.func.id}` swapped in `{_segment(s, n)}`",
                    _minmax_sites, _move_minmax),
    "wrong_arith": (_arith_sites, _move_arith, _d_op(_ARITH), _arith_sites, _move_arith),
    "wrong_bool": (_bool_sites, _move_bool, lambda s, n: f"`{_sym(n.op)}` swapped in `{_segment(s, n)}`",
                   _bool_sites, _move_bool),
    "drop_negation": (_not_sites, _move_drop_not, lambda s, n: f"`not` dropped from `{_segment(s, n)}`",
                      _condition_sites, _move_add_not),
    "wrong_init": (_init_sites, _move_init,
                   lambda s, n: f"initial value `{_segment(s, n)}` -> `{ast.unparse(_init_value(n))}`",
                   _init_sites, _move_init),
    "swap_args": (_args_sites, _move_swap,
                  lambda s, site: f"arguments {site[1] + 1} and {site[1] + 2} swapped in `{_segment(s, site[0])}`",
                  _args_sites, _move_swap),
    "early_return": (_early_sites, _move_early, lambda s, n: f"`{_segment(s, n)}` moved into the loop above it",
                     _loop_ending_in_return, _move_early_repair),
    "drop_return": (_guard_sites, _move_drop_guard,
                    lambda s, n: f"guard `if {_segment(s, n.test)}: {_segment(s, n.body[0])}` removed", None, None),
    "change_constant": (_constant_sites, _move_const,
                        lambda s, n: f"constant `{_segment(s, n)}` -> `{ast.unparse(_bump(n, +1))}`",
                        _constant_repair_sites, _move_const_repair),
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
        sites = find(_find_function(ast.parse(source), function))
    except (SyntaxError, ValueError):
        return None
    for i in range(len(sites)):
        done = _mutate_at(source, function, find, i, move)
        if done is not None and done[0] != source:
            return done[0]
    return None

"""Where each mutation family can plant its bug: the function's nodes walked in a fixed order,
and per family the sites it mutates (and the sites its blind repair changes), with the small
expression builders the moves share. Pure queries of a parsed tree: nothing here edits text."""
from __future__ import annotations

import ast
from typing import Iterator


def find_function(tree: ast.Module, function: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
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


def parent_map(fn: ast.AST) -> dict[int, ast.AST]:
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



def op_symbol(op: ast.AST) -> str:
    return {
        ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
        ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
        ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
        ast.And: "and", ast.Or: "or",
    }.get(type(op), type(op).__name__)


def replace_child(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
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
FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
         ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def flip_sites(fn: ast.AST) -> list[tuple[ast.AST, int]]:
    return [(n, i) for n in _order([n for n in _walk(fn) if isinstance(n, ast.Compare)])
            for i, op in enumerate(n.ops) if type(op) in FLIP]  # type: ignore[attr-defined]


# --- off_by_one: range bounds, slice bounds, integer-like indices, one step off
_INDEX_NAMES = {"i", "j", "k", "n", "m", "idx", "index", "mid", "pos", "lo", "hi", "start", "end",
                "stop", "left", "right", "first", "last", "width", "size", "count", "offset"}


def obo_sites(fn: ast.AST) -> list[tuple[ast.AST, int]]:
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


def obo_mutate(node: ast.AST, direction: int) -> ast.AST:
    inner = _plus_minus_one(node)
    if inner is not None:
        return inner
    k = _int_const(node)
    if k is not None:
        return _int_node(k + 1 if k >= 0 else k - 1)
    return ast.BinOp(node, ast.Add() if direction > 0 else ast.Sub(), ast.Constant(1))


def obo_repair(node: ast.AST, direction: int) -> ast.AST | None:
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
def minmax_sites(fn: ast.AST) -> list[ast.AST]:
    return _order([n for n in _walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                   and n.func.id in ("min", "max")])


# --- wrong_arith: + <-> -, * <-> /, // <-> %
ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
          ast.FloorDiv: ast.Mod, ast.Mod: ast.FloorDiv}


def _is_texty(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))) or \
        isinstance(node, (ast.JoinedStr, ast.List, ast.Tuple, ast.ListComp))


def arith_sites(fn: ast.AST) -> list[ast.AST]:
    out = []
    for n in _walk(fn):
        if isinstance(n, ast.BinOp) and type(n.op) in ARITH and not (_is_texty(n.left) or _is_texty(n.right)):
            # `"%s" % x` is formatting, not arithmetic.
            if isinstance(n.op, ast.Mod) and isinstance(n.left, ast.Constant) and isinstance(n.left.value, str):
                continue
            out.append(n)
        elif isinstance(n, ast.AugAssign) and type(n.op) in ARITH and not _is_texty(n.value):
            out.append(n)
    return _order(out)


# --- wrong_bool
def bool_sites(fn: ast.AST) -> list[ast.AST]:
    return _order([n for n in _walk(fn) if isinstance(n, ast.BoolOp)])


# --- drop_negation: `not x` -> `x`; its blind repair negates the first condition
def not_sites(fn: ast.AST) -> list[ast.AST]:
    return _order([n for n in _walk(fn) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)])


def condition_sites(fn: ast.AST) -> list[ast.AST]:
    return _order([n.test for n in _walk(fn) if isinstance(n, (ast.If, ast.While, ast.IfExp))])


# --- wrong_init: the initial value of an accumulator
def init_value(node: ast.AST) -> ast.AST | None:
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


def init_sites(fn: ast.AST) -> list[ast.AST]:
    accs = _accumulators(fn)
    return _order([n.value for n in _walk(fn) if isinstance(n, ast.Assign) and len(n.targets) == 1
                   and isinstance(n.targets[0], ast.Name) and n.targets[0].id in accs
                   and init_value(n.value) is not None])


# --- swap_args: two adjacent positional arguments of a call
_NO_SWAP = {"min", "max", "print", "isinstance", "issubclass", "getattr", "setattr", "hasattr", "super",
            "set", "frozenset", "any", "all", "sum", "len"}


def args_sites(fn: ast.AST) -> list[tuple[ast.AST, int]]:
    out = []
    for n in _order([n for n in _walk(fn) if isinstance(n, ast.Call)]):
        if _call_name(n) in _NO_SWAP or any(isinstance(a, ast.Starred) for a in n.args):  # type: ignore[attr-defined]
            continue
        for i in range(len(n.args) - 1):  # type: ignore[attr-defined]
            if ast.dump(n.args[i]) != ast.dump(n.args[i + 1]):  # type: ignore[attr-defined]
                out.append((n, i))
    return out


# --- early_return: the `return` after a loop moved into the loop's body (it runs once)
def bodies(fn: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement list in the function (bodies, else branches, finally blocks, handlers)."""
    yield fn.body  # type: ignore[attr-defined]
    for n in _walk(fn):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(n, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield value


def early_sites(fn: ast.AST) -> list[ast.AST]:
    out = []
    for body in bodies(fn):
        for prev, stmt in zip(body, body[1:]):
            if isinstance(stmt, ast.Return) and isinstance(prev, (ast.For, ast.While, ast.AsyncFor)) \
                    and not prev.orelse and not isinstance(prev.body[-1], (ast.Return, ast.Raise)):
                out.append(stmt)
    return _order(out)


def loop_ending_in_return(fn: ast.AST) -> list[ast.AST]:
    return _order([n for n in _walk(fn) if isinstance(n, (ast.For, ast.While, ast.AsyncFor))
                   and isinstance(n.body[-1], ast.Return) and len(n.body) > 1 and not n.orelse])


# --- drop_return: a guard clause `if cond: return x` removed
def guard_sites(fn: ast.AST) -> list[ast.AST]:
    out = []
    for body in bodies(fn):
        if len(body) < 2:
            continue
        for stmt in body[:-1]:
            if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 \
                    and isinstance(stmt.body[0], ast.Return):
                out.append(stmt)
    return _order(out)


# --- change_constant: a numeric literal one step off
def constant_sites(fn: ast.AST) -> list[ast.AST]:
    skip: set[int] = {id(_docstring_node(fn))}
    skip |= {id(n) for n in init_sites(fn)}
    for node, _ in obo_sites(fn):
        skip.add(id(node))
        for sub in ast.walk(node):
            skip.add(id(sub))
    out = []
    parents = parent_map(fn)
    for n in _walk(fn):
        if isinstance(n, ast.Constant) and type(n.value) in (int, float) and id(n) not in skip:
            parent = parents.get(id(n))
            if isinstance(parent, ast.UnaryOp) and id(parent) in skip:
                continue
            out.append(n)
    return _order(out)


def constant_repair_sites(fn: ast.AST) -> list[ast.AST]:
    # A mutant's constant is at least 1 (k -> k + 1 from k >= 0), so smaller ones are not candidates.
    return [n for n in constant_sites(fn) if n.value >= 1]  # type: ignore[attr-defined]


def bump(node: ast.Constant, sign: int) -> ast.AST:
    step = 1 if type(node.value) is int else 1.0
    return ast.Constant(node.value + sign * step)

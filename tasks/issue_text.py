"""Issue text from a failing test, written the way a user reports a bug: what was called, what
was expected, what happened. Never the test's name, never the code of the fix.

Input is what fixrl's generator records for a failing test (`Failure`): pytest's crash message
(with assertion introspection, e.g. `assert 1.5 == 2.0\n +  where 1.5 = mean([1, 2, 3])`) and
the traceback's (file, line) entries; the failing statement is read from the test file itself.
"""
from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass, field


@dataclass
class Failure:
    """One failing test as the generator's pytest plugin reports it."""

    nodeid: str
    message: str = ""
    """pytest's crash message: the exception line, with assertion introspection for asserts."""
    entries: list[tuple[str, int]] = field(default_factory=list)
    """Traceback (path relative to the repository, 1-based line), outermost first."""


@dataclass(frozen=True)
class Symptom:
    call: str
    """The call as the user wrote it, e.g. `mean([1, 2, 3])`."""
    callee: str
    """The called function's name (`mean`), or '' when unknown."""
    text: str
    """One sentence describing what happened against what was expected."""


_PYTEST_CALLS = {"raises", "approx", "warns", "fail", "skip", "xfail", "param", "mark"}
_UNINTERESTING = {"len", "list", "dict", "set", "tuple", "sorted", "str", "int", "float", "repr", "round",
                  "abs", "isinstance", "type", "print", "range", "enumerate", "zip", "sum", "min", "max", "all",
                  "any", "lambda"}


def _statement_at(tree: ast.Module, line: int) -> ast.stmt | None:
    """The innermost statement spanning `line`."""
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        covers = isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno)
        if covers and (best is None or (node.end_lineno or 0) - node.lineno <= (best.end_lineno or 0) - best.lineno):
                best = node
    return best


def _callee(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return ""


def _interesting_calls(node: ast.AST) -> list[ast.Call]:
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            name = _callee(n)
            if name and name not in _UNINTERESTING and name not in _PYTEST_CALLS:
                out.append(n)
    return sorted(out, key=lambda c: (c.lineno, c.col_offset))


def _seg(source: str, node: ast.AST) -> str:
    text = ast.get_source_segment(source, node) or ast.unparse(node)
    return " ".join(text.split()) if "\n" in text else text


def _clean(value: str) -> str:
    value = value.strip()
    value = re.sub(r"\s+±\s+\S+$", "", value)  # pytest.approx
    return value


def _explained_sides(message: str) -> tuple[str, str] | None:
    """('left', 'right') values from a rewritten comparison `assert L == R` (first line)."""
    first = message.strip().split("\n", 1)[0]
    if first.startswith("AssertionError: "):
        first = first[len("AssertionError: "):]
    if not first.startswith("assert "):
        return None
    body = first[len("assert "):]
    try:
        expr = ast.parse(body, mode="eval").body
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
            return _clean(_seg(body, expr.left)), _clean(_seg(body, expr.comparators[0]))
    except SyntaxError:
        pass
    for sym in (" == ", " != ", " is not ", " is ", " <= ", " >= ", " < ", " > "):
        if sym in body:
            left, right = body.split(sym, 1)
            return _clean(left), _clean(right)
    return None


def _where_value(message: str, call_text: str, callee: str) -> str | None:
    """The value pytest reports for a call in its `where X = f(...)` lines."""
    for line in message.split("\n"):
        m = re.match(r"^\s*\+\s+where (.*) = (.*)$", line)
        if m and (callee and re.search(rf"\b{re.escape(callee)}\b", m.group(2)) or m.group(2) == call_text):
            return _clean(m.group(1))
    return None


def _exception(message: str) -> str | None:
    first = message.strip().split("\n", 1)[0].strip()
    if not first or first.startswith("assert ") or first.startswith("AssertionError"):
        return None
    m = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt))(?::\s*(.*))?$", first)
    if not m:
        return None
    name = m.group(1).rsplit(".", 1)[-1]
    detail = (m.group(2) or "").strip()
    return f"{name}: {detail}" if detail else name


_COMPARE_WORDS = {ast.Lt: "below", ast.LtE: "at most", ast.Gt: "above", ast.GtE: "at least"}


def symptom(failure: Failure, test_source: str, test_path: str) -> Symptom | None:
    """What a user would say about this failing test, or None when it cannot be put simply."""
    lines = [ln for p, ln in failure.entries if p == test_path]
    if not lines:
        return None
    try:
        tree = ast.parse(test_source)
    except SyntaxError:
        return None
    stmt = _statement_at(tree, lines[-1])
    if stmt is None:
        return None
    message = failure.message or ""
    exc = _exception(message)

    # `with pytest.raises(E): f(x)` that did not raise
    if isinstance(stmt, ast.With) and "DID NOT RAISE" in message:
        calls = [c for s in stmt.body for c in _interesting_calls(s)]
        m = re.search(r"DID NOT RAISE <class '(?:[\w.]*\.)?(\w+)'>", message)
        if calls and m:
            call = calls[0]
            return Symptom(_seg(test_source, call), _callee(call),
                           f"Calling `{_seg(test_source, call)}` does not raise `{m.group(1)}`, but it should "
                           f"(the input is invalid).")
        return None

    if isinstance(stmt, ast.Assert):
        test = stmt.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, right = test.left, test.comparators[0]
            left_calls, right_calls = _interesting_calls(left), _interesting_calls(right)
            if left_calls:
                call_side, other, call_first = left, right, True
            elif right_calls:
                call_side, other, call_first = right, left, False
            else:
                return None
            calls = _interesting_calls(call_side)
            call = calls[0]
            call_text = _seg(test_source, call_side if isinstance(call_side, ast.Call) else call)
            callee = _callee(call)
            expected = _seg(test_source, other)
            op = test.ops[0]
            if exc:
                return Symptom(call_text, callee,
                               f"Calling `{call_text}` raises `{exc}`, but `{expected}` was expected.")
            sides = _explained_sides(message)
            actual = None
            if sides is not None and isinstance(call_side, ast.Call) and call_side is call:
                actual = sides[0] if call_first else sides[1]
            if actual is None:
                actual = _where_value(message, call_text, callee)
            if actual is None or not isinstance(call_side, ast.Call):
                return None
            if isinstance(op, (ast.Eq, ast.Is)):
                return Symptom(call_text, callee,
                               f"Calling `{call_text}` returns `{actual}`, but `{expected}` was expected.")
            if isinstance(op, (ast.NotEq, ast.IsNot)):
                return Symptom(call_text, callee, f"Calling `{call_text}` returns `{actual}`, which is wrong.")
            if type(op) in _COMPARE_WORDS and call_first:
                return Symptom(call_text, callee, f"Calling `{call_text}` returns `{actual}`, but a value "
                                                  f"{_COMPARE_WORDS[type(op)]} `{expected}` was expected.")
            return None
        # `assert f(x)` / `assert not f(x)`
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        target = test.operand if negated else test
        if isinstance(target, ast.Call) and _interesting_calls(target):
            call_text, callee = _seg(test_source, target), _callee(target)
            if exc:
                return Symptom(call_text, callee, f"Calling `{call_text}` raises `{exc}`.")
            actual = _where_value(message, call_text, callee)
            if actual is None:
                return None
            want = "a false value" if negated else "a true value"
            return Symptom(call_text, callee, f"Calling `{call_text}` returns `{actual}`, but {want} was expected.")
        return None

    # Any other statement that raised inside a call
    if exc:
        calls = _interesting_calls(stmt)
        if calls:
            call = calls[0]
            return Symptom(_seg(test_source, call), _callee(call),
                           f"Calling `{_seg(test_source, call)}` raises `{exc}`.")
    return None


_OPENINGS = ["", "Bug report: ", "I think there is a bug. ", "Unexpected result. "]


def write_issue(symptoms: list[Symptom], where: dict[str, str], rng: random.Random,
                forbidden: list[str] = ()) -> str | None:
    """Up to two symptoms as an issue; None if every version would show a forbidden line
    (the mutated line, or the original one: an issue must never show the fix)."""
    forbidden = [f.strip() for f in forbidden if len(f.strip()) >= 6]
    kept: list[Symptom] = []
    for s in symptoms:
        if any(f in s.text for f in forbidden):
            continue
        if any(k.call == s.call for k in kept):
            continue
        kept.append(s)
        if len(kept) == 2:
            break
    if not kept:
        return None
    parts = [rng.choice(_OPENINGS) + kept[0].text]
    if len(kept) > 1:
        parts.append("Also: " + kept[1].text[0].lower() + kept[1].text[1:])
    callee = kept[0].callee
    if callee and callee in where:
        parts.append(f"`{callee}` is defined in `{where[callee]}`.")
    text = " ".join(parts)
    return None if any(f in text for f in forbidden) else text

"""Issue text from failing tests, written the way a user reports a bug: which public function
was called, with which values, what came back or was raised, and what was expected. Never the
test's name, its variable names where values belong, or the code of the bug or the fix.

Input is what the generator's pytest plugin records for a failing test (`Failure`; the capture
itself is `tasks.generate.failure_capture`): the exception, each traceback frame inside the repository
with a description of the names a test frame refers to (module, class, function with its file,
or a value with its repr), and the operands pytest compared in a failing assert. The failing
statement is read from the test file and its calls to the package are rendered with values:

    test:   assert singular == inflection.singularize(plural)       (parametrized)
    issue:  Calling `inflection.singularize('children')` returns `'childrens'`, but `'child'`
            was expected.

How an expression is rendered (`_Reader.render`): a variable holding a printable value (its
repr parses as Python) becomes that value; one bound once, from a call to the package or to an
unprintable value, is shown as a setup statement (`mf = memoize(f)`); a function or class the
test file defines is shown with its definition; modules, builtins and the package's own names
stay names. A test case's `self.X` naming the package's function or class (a class attribute,
a `staticmethod`) shows as its public name (`cachetools.func.lru_cache`), and a call of the test
class's one-line helper method as the call it returns (`self.cache(2)` ->
`cachetools.Cache(maxsize=2)`). An assert failing in the suite's own helper (`assert_equal` in
a `common.py`) is read as the caller's assert, with the caller's arguments in place of the
helper's parameters. A failing test whose statement cannot be shown this way gives a `Dropped`
with its reason, and `issue_for` says why a bug got no issue at all.

What this does not guarantee: values are those at the moment the test failed (an argument the
buggy call mutated shows its mutated value), a setup statement shows the test's own expression,
not a minimal reproduction, and an issue describes at most two failing tests.
"""
from __future__ import annotations

import ast
import builtins
import copy
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fixrl.tasks.format.materialize import is_test_path


def capture_source() -> str:
    """The capture code the generator appends to its pytest plugin (`tasks.generate.failure_capture`)."""
    return (Path(__file__).with_name("failure_capture.py")).read_text(encoding="utf-8")


@dataclass
class Failure:
    """One failing test as the generator's pytest plugin reports it."""

    nodeid: str
    message: str = ""
    """pytest's crash message: the exception line, with assertion introspection for asserts."""
    entries: list[tuple[str, int]] = field(default_factory=list)
    """Traceback (path relative to the repository, 1-based line), outermost first."""
    detail: dict | None = None
    """What the test saw (`tasks.generate.failure_capture.capture`), or None when it was not captured."""

    @classmethod
    def from_record(cls, nodeid: str, record: dict) -> Failure:
        """From one test's entry in the plugin's JSON report."""
        detail = record.get("detail")
        return cls(nodeid, record.get("message", "") or "", [tuple(e) for e in record.get("entries", [])],
                   detail if isinstance(detail, dict) else None)


@dataclass(frozen=True)
class Symptom:
    """What one failing test shows, in a user's words."""

    call: str
    """The expression shown, with values: `inflection.singularize('children')`."""
    api: str
    """The package's function as the test names it (`inflection.singularize`)."""
    callee: str
    """Its bare name (`singularize`)."""
    file: str
    """The file defining it, '' when unknown."""
    text: str
    """One sentence: what happened against what was expected."""
    context: tuple[str, ...] = ()
    """Setup statements (`mf = memoize(f)`) and definitions of the test's helpers it needs."""


@dataclass(frozen=True)
class Dropped:
    """A failing test that gives no symptom, and why."""

    reason: str


@dataclass(frozen=True)
class Target:
    """The function the bug is in: symptoms that call it come first."""

    name: str
    file: str


class _Unshowable(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Small pure helpers

_VALUE_MAX = 300
"""Longest value shown (a longer one is cut with an ellipsis)."""
_DEF_MAX_LINES = 10
"""Longest helper definition shown in an issue."""
_RAISES = {"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "failUnlessRaises"}
_BUILTIN_NAMES = set(dir(builtins))


def printable(text: str | None) -> bool:
    """True when a repr reads back as a Python expression (`[1, 2]`, `Decimal('1')`)."""
    if not text:
        return False
    try:
        ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return False
    return True


def readable(d: dict | None) -> str | None:
    """The repr of a described value when it reads back as that value: a builtin type's
    (`[1, 'a']`), or one that spells its class's constructor (`Decimal('1.5')`); else None
    (`<Box 3>`, a unittest case's `test_x (mod.T.test_x)`, a cut repr)."""
    if not d or d.get("kind") != "value" or d.get("cut"):
        return None
    text = (d.get("repr") or "").strip()
    if not printable(text) or len(text) > _VALUE_MAX:
        return None
    if d.get("module") == "builtins":
        return text
    name = (d.get("qualname") or "").rsplit(".", 1)[-1]
    return text if name and re.match(rf"(?:[\w.]+\.)?{re.escape(name)}\(", text) else None


def _shown(text: str) -> str:
    text = " ".join(text.split()) if "\n" in text else text
    return text if len(text) <= _VALUE_MAX else text[:_VALUE_MAX] + " …"


def _exception_text(exc: dict) -> str:
    name = exc.get("type") or "an exception"
    module = exc.get("module") or "builtins"
    if module != "builtins":  # `re.error`, `json.decoder.JSONDecodeError`: the name alone is ambiguous
        name = f"{module.lstrip('_')}.{name}"
    message = (exc.get("message") or "").strip().split("\n", 1)[0]
    message = re.sub(r" at 0x[0-9a-fA-F]+", "", message)
    if len(message) > 160:
        message = message[:160] + " …"
    return f"{name}: {message}" if message else name


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _unwrap_approx(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Call) and _call_name(node) == "approx" and node.args:
        return node.args[0]
    return node


def _raised_names(message: str) -> str | None:
    """The exception(s) a `pytest.raises` or `assertRaises` expected, from its failure message."""
    m = re.match(r"^DID NOT RAISE (?:any of )?(.+)$", message.strip().split("\n", 1)[0])
    if m is None:
        m = re.match(r"^(\w+(?: or \w+)*) not raised", message.strip())
        return m.group(1) if m else None
    names = re.findall(r"(?:<class '(?:[\w.]*\.)?(\w+)'>)|\b([A-Z]\w*)\b", m.group(1))
    found = [a or b for a, b in names]
    return " or ".join(f"{n}" for n in found) if found else None


def _bindings(scope: ast.AST) -> dict[str, list[ast.AST]]:
    """Name -> the nodes binding it inside `scope` (not in nested functions or classes)."""
    out: dict[str, list[ast.AST]] = {}

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.setdefault(child.name, []).append(child)
                continue
            if isinstance(child, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                continue
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                out.setdefault(child.id, []).append(child)
            walk(child)

    walk(scope)
    return out


def _bound_inside(node: ast.AST) -> set[str]:
    """Names bound by lambdas and comprehensions inside `node` (they need no value)."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Lambda):
            a = n.args
            out.update(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs)
            out.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)
        elif isinstance(n, ast.comprehension):
            out.update(x.id for x in ast.walk(n.target) if isinstance(x, ast.Name))
    return out


class _TestFile:
    """A parsed test file: scopes, statements, definitions, imports."""

    def __init__(self, source: str):
        self.source = source
        self.tree = ast.parse(source)
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.imported_from: dict[str, str] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.asname is None:
                        self.imported_from[alias.name] = node.module

    def scope(self, first: int, func: str, line: int) -> ast.AST | None:
        """The function or lambda a frame runs (its code's first line and name)."""
        best = None
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func:
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if start == first or node.lineno == first:
                    return node
            elif isinstance(node, ast.Lambda) and func == "<lambda>" and node.lineno == first:
                end = node.body.end_lineno or node.lineno
                if node.body.lineno <= line <= end and best is None:
                    best = node
        return best

    def statement(self, scope: ast.AST, line: int) -> ast.AST | None:
        """The innermost statement of `scope` spanning `line` (a lambda's body for a lambda)."""
        if isinstance(scope, ast.Lambda):
            return scope.body
        best = None
        for node in ast.walk(scope):
            spans = isinstance(node, ast.stmt) and node is not scope and \
                node.lineno <= line <= (node.end_lineno or node.lineno)
            if spans and (best is None or
                          (node.end_lineno or 0) - node.lineno <= (best.end_lineno or 0) - best.lineno):
                best = node
        return best

    def fixture(self, name: str) -> str | None:
        """The source of the pytest fixture `name` defined at the top of this file, if any."""
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name and \
                    any("fixture" in ast.unparse(d) for d in node.decorator_list):
                return self._segment(node)
        return None

    def _segment(self, node: ast.AST) -> str:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        return _dedented("\n".join(self.source.splitlines()[start - 1:node.end_lineno])) or ""

    def function_at(self, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The function whose code starts at `line` (its `def` or first decorator)."""
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    line in (node.lineno, *(d.lineno for d in node.decorator_list)):
                return node
        return None

    def definition(self, line: int, name: str) -> str | None:
        """The source of the function or class `name` defined at `line`, or of `name = lambda ...`."""
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name \
                    and line in (node.lineno, *(d.lineno for d in node.decorator_list)):
                return self._segment(node)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) and node.lineno == line \
                    and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return ast.get_source_segment(self.source, node)
        return None


def _dedented(text: str | None) -> str | None:
    if text is None:
        return None
    lines = text.splitlines()
    indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return "\n".join(x[indent:] for x in lines)


@dataclass
class _Frame:
    path: str | None
    line: int
    func: str
    first: int
    kind: str
    """test | repo | ext (the first frame past the repository)"""
    names: dict = field(default_factory=dict)
    args: dict = field(default_factory=dict)

    @classmethod
    def of(cls, d: dict) -> _Frame:
        path = d.get("path")
        kind = "ext" if path is None else "test" if is_test_path(path) else "repo"
        return cls(path, int(d.get("line") or 0), d.get("func") or "", int(d.get("first") or 0), kind,
                   d.get("names") or {}, d.get("args") or {})


def _choose(frames: list[_Frame]) -> int | None:
    """The test frame to describe: the last one that called into the package, else the
    innermost test frame (where an assert failed)."""
    chosen = None
    for i, f in enumerate(frames):
        if f.kind == "test":
            after = next((g for g in frames[i + 1:] if g.kind != "ext"), None)
            if after is not None and after.kind == "repo":
                chosen = i
    if chosen is None:
        tests = [i for i, f in enumerate(frames) if f.kind == "test"]
        chosen = tests[-1] if tests else None
    return chosen


def _in_package(d: dict | None) -> dict | None:
    """The description of the package's own part of what `d` describes: the function a
    decorator or a curried wrapper holds when the package defines it, else the object itself
    when the package defines it (`memoize`'s wrapper around a test's function), else None."""
    if not d:
        return None
    for cand in (d.get("wraps") or {}, d):
        path = cand.get("file")
        if path and not is_test_path(path):
            return cand
    return None


def _package_file(d: dict | None) -> str | None:
    """The package file defining what `d` describes, or None."""
    own = _in_package(d)
    return own.get("file") if own else None


def _public(dotted: str, d: dict) -> bool:
    qual = (_in_package(d) or d).get("qualname") or ""
    parts = dotted.split(".") + [qual.rsplit(".", 1)[-1]]
    return not any(p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in parts if p)


def _base_name(node: ast.expr) -> str | None:
    """`c` for `c`, `c.info`, `c[1].x`; None for anything else."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _assert_operands(node: ast.stmt) -> list[ast.expr] | None:
    """The compared operands of an `assert` or a unittest assert call; None for other statements."""
    if isinstance(node, ast.Assert):
        test = node.test.operand if isinstance(node.test, ast.UnaryOp) else node.test
        return [test.left, *test.comparators] if isinstance(test, ast.Compare) else [test]
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
            _call_name(node.value).startswith(("assert", "fail")):
        return list(node.value.args)
    return None


def _public_name(d: dict) -> str | None:
    """`cachetools.func.lru_cache`: a package function or class by its module and name, when
    neither is private."""
    own = _in_package(d) or d
    module, qual = own.get("module") or "", own.get("qualname") or ""
    name = f"{module}.{qual}"
    if not module or "<" in qual or any(p.startswith("_") for p in name.split(".")):
        return None
    return name


def _returned(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    """The expression a one-statement function returns (after its docstring), else None."""
    body = [x for x in fn.body if not (isinstance(x, ast.Expr) and isinstance(x.value, ast.Constant))]
    return body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None


# ---------------------------------------------------------------------------------------------
# Reading one failure

class _Reader:
    """One test frame and its statement: which calls reach the package, and how to show any
    expression of the statement with values."""

    def __init__(self, frame: _Frame, after: list[_Frame], tf: _TestFile, scope: ast.AST,
                 read: Callable[[str], _TestFile | None]):
        self.frame, self.after, self.tf, self.scope, self.read = frame, after, tf, scope, read
        self.names = frame.names
        self.binds = _bindings(scope)
        self.setup: list[str] = []
        self.defs: list[str] = []
        self._busy: set[str] = set()
        self._depth = 0

    # -- what a name or a call is
    def resolve(self, func: ast.expr) -> tuple[dict, str] | None:
        """(description, name as written) of a called expression, when known."""
        if isinstance(func, ast.Call):
            inner = self.resolve(func.func)
            return inner if inner and _package_file(inner[0]) else None
        if isinstance(func, ast.Subscript):  # a generic class: `LFUCache[int, int](maxsize=2)`
            inner = self.resolve(func.value)
            return inner if inner and inner[0].get("kind") == "class" else None
        dotted = _dotted(func)
        if dotted is None:
            return None
        d = self.names.get(dotted)
        if d is not None and dotted.startswith("self.") and dotted.count(".") == 1:
            return self._case_attribute(dotted, d)
        if d is None and "." in dotted:
            base, attr = dotted.rsplit(".", 1)
            owner = self.names.get(base)
            if owner and owner.get("kind") in ("value", "callable") and _package_file(owner):
                d = {"kind": "method", "file": owner["file"], "module": owner.get("module"),
                     "qualname": f"{owner.get('qualname')}.{attr}"}
        return (d, dotted) if d else None

    def _case_attribute(self, dotted: str, d: dict) -> tuple[dict, str] | None:
        """What `self.X` of a test case calls: the package's function or class a class attribute
        names (`Cache = cachetools.LRUCache`), by its public name; for the test class's own
        one-line helper (`def cache(self, n): return cachetools.Cache(n)`), what it returns."""
        if self._depth > 4:
            return None
        if _package_file(d):
            named = d.get("kind") in ("function", "class")
            return d, (_public_name(d) if named else None) or dotted
        fn = self._method(d)
        ret = _returned(fn) if fn is not None else None
        if not isinstance(ret, ast.Call):
            return d, dotted
        self._depth += 1
        try:
            return self.resolve(ret.func)
        finally:
            self._depth -= 1

    def _method(self, d: dict) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The definition of a test class's own method, from its description."""
        path = d.get("file") or ""
        if d.get("kind") != "function" or not is_test_path(path):
            return None
        tf = self.tf if path == self.frame.path else self.read(path)
        return tf.function_at(int(d.get("line") or 0)) if isinstance(tf, _TestFile) else None

    def inlined(self, call: ast.Call) -> ast.expr | None:
        """A call of the test class's one-line helper (`self.decorator(maxsize=2)` with
        `return self.DECORATOR(maxsize, **kwargs)`) as the expression it returns, its parameters
        replaced by the call's arguments; None for any other call."""
        dotted = _dotted(call.func)
        if dotted is None or not dotted.startswith("self.") or dotted.count(".") != 1:
            return None
        fn = self._method(self.names.get(dotted) or {})
        ret = _returned(fn) if fn is not None else None
        values = _arguments(fn, call, method=True) if ret is not None else None
        return _Replace(values).visit(copy.deepcopy(ret)) if values is not None else None

    def api_calls(self, node: ast.AST) -> list[tuple[ast.Call, dict, str]]:
        """Calls in `node` of something the package defines, in source order."""
        out = []
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                r = self.resolve(n.func)
                if r and _package_file(r[0]):
                    out.append((n, r[0], r[1]))
        return sorted(out, key=lambda x: (x[0].lineno, x[0].col_offset))

    def binding(self, name: str) -> tuple[ast.expr, ast.expr] | None:
        """(target, expression) of the last plain assignment of `name` before the failing line:
        `r = f(x)`, an unpacking `first, rest = f(x)`, or one name of `a, b = x, y`; None when
        it was bound otherwise."""
        before = [n for n in self.binds.get(name, []) if getattr(n, "lineno", 0) < self.frame.line]
        if not before:
            return None
        node = max(before, key=lambda n: (n.lineno, n.col_offset))
        parent = self.tf.parent.get(node)
        target = node
        if isinstance(parent, ast.Tuple) and all(isinstance(e, ast.Name) for e in parent.elts):
            target, parent = parent, self.tf.parent.get(parent)
        if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and parent.targets[0] is target):
            return None
        value = parent.value
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
            return node, value.elts[target.elts.index(node)]
        return target, value

    def local_def(self, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
        """The `def` or `class` of `name` in the test function itself, before the failing line."""
        found = [n for n in self.binds.get(name, []) if n.lineno < self.frame.line and
                 isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        return found[-1] if found else None

    def assigned(self, name: str) -> ast.expr | None:
        found = self.binding(name)
        return found[1] if found else None

    def from_api(self, name: str) -> ast.expr | None:
        """The assignment of `name` when it calls the package (`r = f(x)`)."""
        value = self.assigned(name)
        return value if value is not None and self.api_calls(value) else None

    def observed(self, node: ast.expr) -> ast.expr | None:
        """The expression to show for one side of an assert: itself when it calls the package,
        the assignment of a bare name that does, else None."""
        if self.api_calls(node):
            return node
        if isinstance(node, ast.Name):
            found = self.binding(node.id)
            if found is not None and self.api_calls(found[1]):
                # `r = f(x)`: the call itself; `first, rest = f(x)`: `rest`, after its setup; an
                # object changed since (`c = LFUCache(2); c[1] = 1`): the name, after its setup
                alone = isinstance(found[0], ast.Name) and not self._changes(node.id, found[1]) and \
                    not self._held_elsewhere({node.id}, found[1])
                return found[1] if alone else node
            return None
        if any(isinstance(n, ast.Name) and self.from_api(n.id) is not None for n in ast.walk(node)):
            return node
        return None

    # -- rendering
    def render(self, node: ast.expr) -> str:
        """`node` as source, its variables replaced by values (see the module docstring)."""
        new = _Substitute(self, _bound_inside(node)).visit(copy.deepcopy(node))
        return ast.unparse(ast.fix_missing_locations(_fold(new)))

    def add_setup(self, name: str) -> None:
        """Show how `name` was made: its assignment, and what changed the object since."""
        found = self.binding(name)
        if found is None:
            raise _Unshowable("a variable has no printable value")
        target, value = found
        names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        if self._held_elsewhere(names, value):
            raise _Unshowable("the object may have changed through another one")
        self._busy |= names
        written = ", ".join(map(ast.unparse, target.elts)) if isinstance(target, ast.Tuple) else ast.unparse(target)
        lines = [f"{written} = {self.render(value)}"]
        lines += [self._statement(s) for n in sorted(names) for s in self._changes(n, value)]
        self._busy -= names
        for text in lines:
            if text not in self.setup:
                self.setup.append(text)

    def _held_elsewhere(self, names: set[str], value: ast.expr) -> bool:
        """True when, after its making, the object went into another one the test kept
        (`outer = cached(maxsize=3)(inner)`): calls of that one may have changed it, and its
        setup alone would show another object."""
        for node in ast.walk(self.scope):
            if isinstance(node, ast.Assign) and value.lineno < node.lineno < self.frame.line:
                for call in (c for c in ast.walk(node.value) if isinstance(c, ast.Call)):
                    if any(isinstance(a, ast.Name) and a.id in names for a in call.args):
                        return True
        return False

    def _changes(self, name: str, value: ast.expr) -> list[ast.stmt]:
        """Statements between `name = ...` and the failing line that change the object
        (`t.add(2)`, `t.limit = 3`): a setup that left them out would show another object."""
        out: list[ast.stmt] = []
        for node in ast.walk(self.scope):
            if not isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.Assert)) or \
                    not value.lineno < node.lineno < self.frame.line:
                continue
            operands = _assert_operands(node)
            if operands is not None:  # `self.assertEqual(cached(1), 1)` before: the call `cached(1)`
                out += [ast.copy_location(ast.Expr(o), o) for o in operands
                        if isinstance(o, ast.Call) and _base_name(o.func) == name]
                continue
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AugAssign) else [node.value]
            for t in targets:
                base = t.func if isinstance(t, ast.Call) else t
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if isinstance(base, ast.Name) and base.id == name and base is not t:
                    out.append(node)
                    break
        return sorted(out, key=lambda n: n.lineno)

    def _statement(self, node: ast.stmt) -> str:
        if isinstance(node, ast.Expr):
            return self.render(node.value)
        if isinstance(node, ast.Assign):
            return f"{' = '.join(ast.unparse(t) for t in node.targets)} = {self.render(node.value)}"
        assert isinstance(node, ast.AugAssign)
        op = ast.unparse(ast.AugAssign(target=ast.Name("x"), op=node.op, value=ast.Constant(0)))[2:-2]
        return f"{ast.unparse(node.target)} {op} {self.render(node.value)}"

    def add_definition(self, name: str, d: dict) -> None:
        source = None
        if d.get("file") == self.frame.path:
            line = int(d.get("line") or 0)
            if not line and d.get("kind") == "class":  # a class has no first line recorded: its only `class`
                found = [n for n in ast.walk(self.tf.tree) if isinstance(n, ast.ClassDef) and n.name == name]
                line = found[0].lineno if len(found) == 1 else 0
            source = self.tf.definition(line, name)
        if source is None:
            raise _Unshowable("a helper of the test is defined out of reach")
        self._add_def(source)

    def _add_def(self, source: str) -> None:
        if len(source.splitlines()) > _DEF_MAX_LINES:
            raise _Unshowable("a helper of the test is too long to show")
        if source not in self.defs:
            self.defs.append(source)

    def add_fixture(self, name: str) -> bool:
        """Show the pytest fixture a parameter of the test comes from (this file or a conftest.py
        above it); False when there is none."""
        fn = self.scope
        params = {a.arg for a in fn.args.args} if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
        if name not in params or self.frame.path is None:
            return False
        parts = self.frame.path.split("/")[:-1]
        files = [self.frame.path] + ["/".join(parts[:i] + ["conftest.py"]) for i in range(len(parts), -1, -1)]
        for path in files:
            tf = self.tf if path == self.frame.path else self.read(path)
            source = tf.fixture(name) if isinstance(tf, _TestFile) else None
            if source is not None:
                self._add_def(source)
                return True
        return False

    def value(self, d: dict | None, node: ast.expr | None, *, exact: bool) -> str | None:
        """A compared operand as text: its repr, or the rendered expression when the repr does
        not read back (exact: only a value that reads back, or a rendering without calls into
        the package)."""
        text = (d or {}).get("repr")
        if readable(d):
            return _shown(text)
        if text is not None and d.get("kind") == "value" and not exact:
            return _shown(text + (" …" if d.get("cut") else ""))
        if node is not None and self.observed(node) is None:
            node = _unwrap_approx(node)
            made = self.binding(node.id) if isinstance(node, ast.Name) else None
            if made is not None and isinstance(made[0], ast.Name):
                node = made[1]  # `alist` -> `list(range(100))`: the expected value, not a name
            return _shown(self.render(node))
        if text is not None and not exact:
            return _shown(text)
        return None

    def context(self) -> tuple[str, ...]:
        return tuple(self.setup) + tuple(self.defs)


class _Substitute(ast.NodeTransformer):
    """Variables to values (see `_Reader.render`); what it cannot show raises `_Unshowable`."""

    def __init__(self, reader: _Reader, bound: set[str]):
        self.r, self.bound = reader, bound

    def _named(self, node: ast.expr, written: str, d: dict) -> ast.expr:
        """A function or class by its own name (a parameter or alias holding `dict` shows as
        `dict`), with its definition when the test file defines it, and its module when the
        standard library does (`operator.add`)."""
        own = (d.get("qualname") or "").rsplit(".", 1)[-1]
        path = d.get("file")
        if written.startswith("self.") and (_package_file(d) or (path and is_test_path(path))):
            # a test case's attribute naming the package's function or class: its public name;
            # the test class's own method: nothing a reader can call
            public = _public_name(d) if _package_file(d) else None
            if public is None:
                raise _Unshowable("the test uses attributes of its test case")
            return ast.copy_location(ast.parse(public, mode="eval").body, node)
        if path and is_test_path(path):
            self.r.add_definition(own if own.isidentifier() else written, d)
            return node if not own.isidentifier() else ast.copy_location(ast.Name(own, ast.Load()), node)
        if not own.isidentifier():
            raise _Unshowable("a variable has no printable value")
        module = (d.get("module") or "builtins").lstrip("_")
        if not path and module != "builtins":
            return ast.copy_location(ast.parse(f"{module}.{own}", mode="eval").body, node)
        return ast.copy_location(ast.Name(own, ast.Load()), node)

    def _value(self, node: ast.expr, d: dict) -> ast.expr:
        text = readable(d)
        if text is None:
            raise _Unshowable("a variable has no printable value")
        return ast.copy_location(ast.parse(text, mode="eval").body, node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        inner = self.r.inlined(node)
        if inner is not None and self.r._depth <= 4:
            self.r._depth += 1
            try:
                return self.visit(ast.copy_location(inner, node))
            finally:
                self.r._depth -= 1
        f = node.func
        if isinstance(f, ast.Attribute) and (self.r.names.get(_dotted(f) or "") or {}).get("kind") == "value":
            # a called attribute holding a value (`obj.alias(1)` with `alias` None): the call as
            # written on its object, never `None(1)`
            f.value = self.visit(f.value)
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        if isinstance(f, ast.Name) and f.id not in self.bound and \
                (self.r.names.get(f.id) or {}).get("kind") == "value":
            if self.r.binding(f.id) is None:  # `get(x)` with `get` None: its making, or nothing
                raise _Unshowable("a variable has no printable value")
            self.r.add_setup(f.id)
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        dotted = _dotted(node) or ""
        d = self.r.names.get(dotted)
        if d is None:
            return self.generic_visit(node)
        kind = d.get("kind")
        base = self.r.names.get(dotted.split(".", 1)[0]) or {}
        if kind == "module" or (kind in ("function", "class", "callable") and base.get("kind") == "module"):
            return node  # a module's attribute (`inflection.singularize`): a name, not a value
        if kind in ("function", "class") and _package_file(d) and not dotted.startswith("self.") and \
                not (_in_package(d) or {}).get("qualname", "").isidentifier():
            return self.generic_visit(node)  # `cached.cache_parameters`, a lambda the package stored on `cached`
        if kind in ("function", "class"):
            return self._named(node, dotted, d)
        if readable(d) is None and dotted.startswith("self."):
            raise _Unshowable("the test uses attributes of its test case")
        return self._value(node, d)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        name, r = node.id, self.r
        if name in self.bound or name in r._busy:
            return node  # bound inside the expression, or the setup being written
        d = r.names.get(name)
        if d is None:
            if name in _BUILTIN_NAMES:
                return node
            raise _Unshowable("no value recorded for a name the test uses")
        kind = d.get("kind")
        wrapped = d.get("wraps") or {}
        local = r.local_def(name)
        if local is not None:
            r._add_def(r.tf._segment(local))  # defined in the test itself, decorators and all
        elif wrapped.get("file") and is_test_path(wrapped["file"]) and \
                wrapped.get("qualname", "").rsplit(".", 1)[-1] == name:
            r.add_definition(name, wrapped)  # the test's own function under a decorator (`@memoize`)
        elif r.from_api(name) is not None:
            r.add_setup(name)
        elif kind in ("function", "class"):
            return self._named(node, name, d)
        elif kind == "callable" and _package_file(d) and name not in r.binds:
            # the package's own callable object (`from toolz.curried import reduce`): by its module,
            # since its name alone may read as another function (`functools.reduce`)
            module = r.tf.imported_from.get(name)
            if module is not None:
                return ast.copy_location(ast.parse(f"{module}.{name}", mode="eval").body, node)
        elif kind == "module":
            pass
        elif kind == "value" and _package_file(d) and name in r.binds:
            # the package's own object made in the test (`for cache in (copy.copy(src), ...)`): its
            # repr was read after the failure and need not rebuild it; its making is shown instead
            if r.binding(name) is None:
                raise _Unshowable("a variable has no printable value")
            r.add_setup(name)
        elif readable(d) is not None and not is_test_path(d.get("file") or ""):
            return self._value(node, d)  # (an object of the test's own class: its making, below)
        elif r.binding(name) is not None:
            r.add_setup(name)
        elif not r.add_fixture(name):
            raise _Unshowable("the test uses attributes of its test case" if name == "self"
                              else "a variable has no printable value")
        return node


_STR_METHODS = {"capitalize", "upper", "lower", "title", "swapcase", "strip", "lstrip", "rstrip", "casefold"}


def _fold(node: ast.AST) -> ast.AST:
    """Constant subscripts of literals evaluated (`[1, 2][0]` -> `1`), case changes of string
    literals too (`'cow'.capitalize()` -> `'Cow'`), `dict({1: 2})` -> `{1: 2}`, literal `*args`
    and `**kwargs` spread."""

    class Fold(ast.NodeTransformer):
        def visit_Subscript(self, n: ast.Subscript) -> ast.AST:
            self.generic_visit(n)
            try:
                value = ast.literal_eval(n.value)[ast.literal_eval(n.slice)]
                text = repr(value)
                return ast.copy_location(ast.parse(text, mode="eval").body, n) if printable(text) else n
            except (ValueError, TypeError, KeyError, IndexError, SyntaxError):
                return n

        def visit_Call(self, n: ast.Call) -> ast.AST:
            self.generic_visit(n)
            f = n.func
            if isinstance(f, ast.Name) and f.id in ("dict", "list", "tuple") and len(n.args) == 1 and not n.keywords \
                    and isinstance(n.args[0], {"dict": ast.Dict, "list": ast.List, "tuple": ast.Tuple}[f.id]):
                return n.args[0]  # `dict({1: 2})` -> `{1: 2}`
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Constant) and isinstance(f.value.value, str) \
                    and f.attr in _STR_METHODS and not n.keywords \
                    and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in n.args):
                try:
                    value = getattr(f.value.value, f.attr)(*(a.value for a in n.args))
                    return ast.copy_location(ast.Constant(value), n)
                except (TypeError, ValueError):
                    return n
            keywords = []
            for k in n.keywords:
                if k.arg is None and isinstance(k.value, ast.Dict) and \
                        all(isinstance(x, ast.Constant) and isinstance(x.value, str) and x.value.isidentifier()
                            for x in k.value.keys):
                    keywords.extend(ast.keyword(x.value, v) for x, v in zip(k.value.keys, k.value.values))
                else:
                    keywords.append(k)
            n.keywords = keywords
            args = []
            for a in n.args:
                if isinstance(a, ast.Starred) and isinstance(a.value, (ast.List, ast.Tuple)):
                    args.extend(a.value.elts)
                else:
                    args.append(a)
            n.args = args
            return n

    return Fold().visit(node)


# ---------------------------------------------------------------------------------------------
# Sentences

_COMPARE_WORDS = {"<": "below", "<=": "at most", ">": "above", ">=": "at least"}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _verb(r: _Reader, shown: ast.expr) -> tuple[str, str]:
    """('Calling ', 'returns') for a call of the package, ('', 'gives') for other expressions
    (`sorted(f(x))`)."""
    if isinstance(shown, ast.Name):
        return "", "is"
    if not isinstance(shown, ast.Call):
        return "", "gives"
    alias = isinstance(shown.func, ast.Name) and r.from_api(shown.func.id) is not None
    direct = alias or any(c[0] is shown for c in r.api_calls(shown))
    return ("Calling ", "returns") if direct else ("", "gives")


def _comparison(r: _Reader, call_text: str, call: ast.expr, op: str, actual: str, expected: str, api_left: bool) -> str:
    lead, verb = _verb(r, call)
    head = f"{lead}`{call_text}` {verb} `{actual}`"
    if op in ("==", "is"):
        return f"{head}, but `{expected}` was expected."
    if op in ("!=", "is not"):
        return f"{head}, but anything other than `{expected}` was expected."
    if op in _COMPARE_WORDS:
        op = op if api_left else _FLIP[op]
        return f"{head}, but a value {_COMPARE_WORDS[op]} `{expected}` was expected."
    if op == "in":
        return f"{head}, but one of `{expected}` was expected." if api_left else \
            f"{head}, but a value containing `{expected}` was expected."
    if op == "not in":
        return f"{head}, but a value not in `{expected}` was expected." if api_left else \
            f"{head}, but a value without `{expected}` was expected."
    raise _Unshowable(f"an assert with `{op}`")


_UNITTEST_OPS = {
    "assertEqual": "==", "assertEquals": "==", "failUnlessEqual": "==", "assertListEqual": "==",
    "assertTupleEqual": "==", "assertDictEqual": "==", "assertSetEqual": "==", "assertSequenceEqual": "==",
    "assertMultiLineEqual": "==", "assertCountEqual": "==", "assertAlmostEqual": "==",
    "assertAlmostEquals": "==", "assertNotEqual": "!=", "assertNotEquals": "!=", "assertIs": "is",
    "assertIsNot": "is not", "assertIn": "in", "assertNotIn": "not in", "assertGreater": ">",
    "assertGreaterEqual": ">=", "assertLess": "<", "assertLessEqual": "<=",
}
_UNITTEST_UNARY = {"assertTrue": "a true value", "failUnless": "a true value", "assert_": "a true value",
                   "assertFalse": "a false value", "failIf": "a false value", "assertIsNone": "`None`",
                   "assertIsNotNone": "a value other than `None`"}


# ---------------------------------------------------------------------------------------------
# The kinds of failure

def _api(r: _Reader, shown: ast.expr) -> tuple[str, dict]:
    """(name as written, description) of the package's public function `shown` exercises: a
    call in it, or the call that made a local it calls (`mf(2)` after `mf = memoize(f)`)."""
    found: list[tuple[str, dict]] = []
    for _, d, dotted in r.api_calls(shown):
        local = r.local_def(dotted)
        decorators = [x for x in (r.resolve(e) for e in local.decorator_list) if x and _package_file(x[0])] \
            if local is not None else []
        if decorators:  # `@memoize def double(x)`: the package's part is the decorator
            found.extend((w, x) for x, w in decorators)
            continue
        own = ((_in_package(d) or d).get("qualname") or "").rsplit(".", 1)[-1]
        # `cache.getsizeof(x)`: the method itself; `mf(2)`, `c.info()` with a lambda: what made them
        method = d.get("kind") == "method" or ("." in dotted and own.isidentifier())
        made = r.from_api(dotted.split(".", 1)[0]) if not method else None
        found.extend((x[2], x[1]) for x in (r.api_calls(made) if made is not None else [(None, d, dotted)]))
    for n in ast.walk(shown):
        made = r.from_api(n.id) if isinstance(n, ast.Name) else None
        found.extend((x[2], x[1]) for x in (r.api_calls(made) if made is not None else []))
    if not found:
        raise _Unshowable("the failing statement calls nothing of the package")
    public = [x for x in found if _public(*x)]
    if not public:
        raise _Unshowable("the test calls only private functions of the package")
    if len(public) < len(found):  # `w = _Wrapper(10)` before a public `w.wrap(s)`: still not the API
        raise _Unshowable("the test calls a private function of the package")
    return public[0]


def _sym(r: _Reader, shown: ast.expr, text: str) -> Symptom:
    dotted, d = _api(r, shown)
    callee = ((_in_package(d) or d).get("qualname") or dotted).rsplit(".", 1)[-1]
    return Symptom(r.render(shown), dotted, callee, _package_file(d) or "", text, r.context())


def _no_raise(r: _Reader, body: list[ast.AST] | ast.expr, expected: str) -> Symptom:
    nodes = body if isinstance(body, list) else [body]
    calls = [c for n in nodes for c in r.api_calls(n)]
    if not calls:
        raise _Unshowable("the `raises` block calls nothing of the package")
    call = calls[-1][0]
    text = r.render(call)
    return _sym(r, call, f"Calling `{text}` does not raise `{expected}`, but it should.")


def _raises_call(node: ast.Call) -> ast.expr | None:
    """`raises(E, lambda: f(x))` / `raises(E, f, x)` -> `f(x)`."""
    if len(node.args) < 2:
        return None
    fn = node.args[1]
    if isinstance(fn, ast.Lambda) and not fn.args.args:
        return fn.body
    return ast.Call(func=fn, args=node.args[2:], keywords=[k for k in node.keywords if k.arg not in ("match", "msg")])


def _expected_raise(r: _Reader, stmt: ast.AST) -> str | None:
    """The exception a `with pytest.raises(E)` / `raises(E, lambda: ...)` around `stmt` expects."""
    node = stmt
    while node is not None and node is not r.tf.tree:
        if isinstance(node, ast.With):
            for item in node.items:
                e = item.context_expr
                if isinstance(e, ast.Call) and _call_name(e) in _RAISES and e.args:
                    return ast.unparse(e.args[0])
        if isinstance(node, ast.Call) and _call_name(node) in _RAISES and node.args:
            return ast.unparse(node.args[0])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        node = r.tf.parent.get(node)
    return None


def _header(stmt: ast.AST) -> ast.AST:
    """The part of a statement that runs on its own line(s): not the bodies of a compound one."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return stmt.iter
    if isinstance(stmt, (ast.If, ast.While)):
        return stmt.test
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return ast.Tuple([i.context_expr for i in stmt.items], ast.Load())
    if isinstance(stmt, ast.Try):
        return ast.Tuple([], ast.Load())
    return stmt


def _raised(r: _Reader, stmt: ast.AST, exc: dict) -> Symptom:
    into = next((f for f in r.after if f.kind == "repo"), None)
    if isinstance(stmt, (ast.Import, ast.ImportFrom)) and into is not None:
        text = ast.unparse(stmt)
        return Symptom(text, text.split()[1], text.split()[1].split(".")[-1], into.path or "",
                       f"`{text}` raises `{_exception_text(exc)}`, but the import was expected to succeed.")
    head = _header(stmt)
    calls = r.api_calls(head)
    if calls:
        match = [c for c in calls if into is not None and
                 ((_in_package(c[1]) or c[1]).get("qualname") or "").rsplit(".", 1)[-1] == into.func]
        # `f(None)(g)` raising in `f` itself: the call of `f`, not of what it returned
        match.sort(key=lambda c: isinstance(c[0].func, ast.Call))
        shown: ast.expr = (match or calls)[0][0]
        lead = f"Calling `{r.render(shown)}` raises"
    else:
        # raised by the test's own code on what the package returned: `r = f(x); r["a"]`
        shown = head.value if isinstance(head, (ast.Expr, ast.Assign, ast.AugAssign)) else \
            head.test if isinstance(head, ast.Assert) else head
        if isinstance(shown, ast.Compare) and len(shown.ops) == 1:
            shown = shown.left if r.observed(shown.left) is not None else shown.comparators[0]
        elif isinstance(shown, ast.Call) and _call_name(shown).startswith("assert"):
            # `self.assertEqual(cached.info(), 1)` raising in the test's own code: the operand
            shown = next((a for a in shown.args if r.observed(a) is not None), shown)
        if not isinstance(shown, ast.expr) or r.observed(shown) is None:
            raise _Unshowable("the failing statement calls nothing of the package")
        lead = f"`{r.render(shown)}` raises"
    sentence = f"{lead} `{_exception_text(exc)}`"
    wanted = _expected_raise(r, stmt)
    if wanted:
        sentence += f", but `{wanted}` was expected."
    elif isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1:
        left, right = stmt.test.left, stmt.test.comparators[0]
        other = right if any(n is shown for n in ast.walk(left)) else left
        expected = r.value(None, other, exact=True) if r.observed(other) is None else None
        sentence += f", but `{expected}` was expected." if expected else ", but no error was expected."
    else:
        sentence += ", but no error was expected."
    return _sym(r, shown, sentence)


def _compare(r: _Reader, test: ast.Compare, records: list[dict], message: str) -> Symptom:
    if len(test.ops) != 1:
        raise _Unshowable("a chained comparison")
    left, right = test.left, test.comparators[0]
    shown_left, shown_right = r.observed(left), r.observed(right)
    if shown_left is None and shown_right is None:
        raise _Unshowable("the assertion calls nothing of the package")
    api_left = shown_left is not None
    shown = shown_left if api_left else shown_right
    other = right if api_left else left
    rec = next((c for c in reversed(records) if c.get("path") == r.frame.path and c.get("line") == r.frame.line),
               None)
    op = ast.unparse(ast.Compare(left=ast.Constant(0), ops=test.ops, comparators=[ast.Constant(0)]))[2:-2]
    if rec is not None:
        actual = r.value(rec["left"] if api_left else rec["right"], None, exact=False)
        expected = r.value(rec["right"] if api_left else rec["left"], other, exact=True)
    else:
        sides = _explained_sides(message)
        if sides is None:
            raise _Unshowable("no compared values recorded")
        actual, expected = (sides if api_left else sides[::-1])
        if not printable(expected):
            expected = r.value(None, other, exact=True)
    if actual is None or expected is None:
        raise _Unshowable("a compared value has no printable form")
    if actual == expected and op.strip() not in ("!=", "is not"):
        raise _Unshowable("the compared values print the same")
    text = r.render(shown)
    return _sym(r, shown, _comparison(r, text, shown, op.strip(), actual, expected, api_left))


def _explained_sides(message: str) -> tuple[str, str] | None:
    """(left, right) from pytest's `assert L == R` line, when no operands were recorded."""
    first = message.strip().split("\n", 1)[0]
    first = first[len("AssertionError: "):] if first.startswith("AssertionError: ") else first
    if not first.startswith("assert "):
        return None
    try:
        expr = ast.parse(first[len("assert "):], mode="eval").body
    except SyntaxError:
        return None
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        return ast.unparse(expr.left), ast.unparse(expr.comparators[0])
    return None


_WHERE = re.compile(r"^\s*\+\s+where (.*) = (?:<(?:function|bound method|built-in function) ([\w.]+)[^>]*>|([\w.]+))\(")


def _where_value(message: str, callee: str) -> str | None:
    """The value pytest shows for a call of `callee` in its `where X = f(...)` lines."""
    for line in message.split("\n"):
        m = re.match(_WHERE, line)
        if m and (m.group(2) or m.group(3)).rsplit(".", 1)[-1] == callee:
            return m.group(1).strip()
    return None


def _truth(r: _Reader, test: ast.expr, message: str) -> Symptom:
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    target = test.operand if negated else test
    if isinstance(target, ast.Call) and _call_name(target) in _RAISES and not negated:
        call = _raises_call(target)
        if call is not None:
            return _no_raise(r, call, ast.unparse(target.args[0]))
    shown = r.observed(target)
    if shown is None:
        raise _Unshowable("the assertion calls nothing of the package")
    first = message.strip().split("\n", 1)[0]
    first = first[len("AssertionError: "):] if first.startswith("AssertionError: ") else first
    value = first[len("assert not "):] if negated and first.startswith("assert not ") else \
        first[len("assert "):] if first.startswith("assert ") else None
    want = "a false value" if negated else "a true value"
    text = r.render(shown)
    lead, verb = _verb(r, shown)
    if value is None:
        raise _Unshowable("no value recorded for the asserted expression")
    sentence = f"{lead}`{text}` {verb} `{_shown(value)}`, but {want} was expected."
    calls = r.api_calls(shown)
    if calls and calls[0][0] is not shown:
        inner = _where_value(message, _call_name(calls[0][0]))
        if inner is not None:
            sentence += f" (`{r.render(calls[0][0])}` returns `{_shown(inner)}`.)"
    return _sym(r, shown, sentence)


def _unittest(r: _Reader, call: ast.Call) -> Symptom:
    method = _call_name(call)
    ext = next((f for f in r.after if f.kind == "ext"), None)
    values = _unittest_operands(ext.args if ext else {})
    if method in _UNITTEST_OPS and len(call.args) >= 2:
        op = _UNITTEST_OPS[method]
        shown_left, shown_right = r.observed(call.args[0]), r.observed(call.args[1])
        if shown_left is None and shown_right is None:
            raise _Unshowable("the assertion calls nothing of the package")
        api_left = shown_left is not None
        shown = shown_left if api_left else shown_right
        other = call.args[1] if api_left else call.args[0]
        a, e = (0, 1) if api_left else (1, 0)
        actual = r.value(values[a], None, exact=False) if len(values) > 1 else None
        expected = r.value(values[e] if len(values) > 1 else None, other, exact=True)
        if actual is None or expected is None:
            raise _Unshowable("a compared value has no printable form")
        if actual == expected and op not in ("!=", "is not"):
            raise _Unshowable("the compared values print the same")
        return _sym(r, shown, _comparison(r, r.render(shown), shown, op, actual, expected, api_left))
    if method in _UNITTEST_UNARY and call.args:
        shown = r.observed(call.args[0])
        if shown is None:
            raise _Unshowable("the assertion calls nothing of the package")
        actual = r.value(values[0], None, exact=False) if values else None
        if actual is None:
            raise _Unshowable("no value recorded for the asserted expression")
        lead, verb = _verb(r, shown)
        return _sym(r, shown, f"{lead}`{r.render(shown)}` {verb} `{actual}`, but {_UNITTEST_UNARY[method]} "
                              "was expected.")
    if method in _RAISES:
        inner = _raises_call(call)
        if inner is not None:
            return _no_raise(r, inner, ast.unparse(call.args[0]))
    raise _Unshowable(f"unittest's `{method}`")


_UNITTEST_PAIRS = [("first", "second"), ("member", "container"), ("expr1", "expr2"), ("a", "b"), ("list1", "list2"),
                   ("tuple1", "tuple2"), ("d1", "d2"), ("set1", "set2"), ("seq1", "seq2"), ("expr",), ("obj",)]


def _unittest_operands(args: dict) -> list[dict]:
    """The operands a unittest assert method received, in its parameters' order (a record read
    back from a journal may have its keys sorted: `container` before `member`)."""
    for names in _UNITTEST_PAIRS:
        if all(n in args for n in names):
            return [args[n] for n in names]
    return [d for k, d in args.items() if k not in ("self", "msg")]


def _assertion(r: _Reader, stmt: ast.AST, detail: dict) -> Symptom:
    message = (detail.get("exc") or {}).get("message") or ""
    if isinstance(stmt, ast.Assert):
        test = stmt.test
        if isinstance(test, ast.Compare):
            return _compare(r, test, detail.get("compares") or [], message)
        if isinstance(test, ast.BoolOp):
            raise _Unshowable("an assert of `and` / `or`")
        return _truth(r, test, message)
    expr = stmt.value if isinstance(stmt, ast.Expr) else stmt
    if isinstance(expr, ast.Call) and _call_name(expr).startswith(("assert", "fail")):
        return _unittest(r, expr)
    raise _Unshowable("an assertion error outside an assert")


def _with_body(r: _Reader, stmt: ast.AST) -> list[ast.AST] | None:
    """The body of the `with pytest.raises(...)` at or around `stmt`."""
    node = stmt
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(node, ast.With) and any(
                isinstance(i.context_expr, ast.Call) and _call_name(i.context_expr) in _RAISES for i in node.items):
            return node.body
        node = r.tf.parent.get(node)
    return None


def _doctest(example: dict, read: Callable[[str], _TestFile | None]) -> Symptom:
    """A failing example of a docstring (pytest's doctest items): the example is already the
    call with values; examples before it that bind names are its setup."""
    source = (example.get("source") or "").strip()
    want, got = (example.get("want") or "").strip(), (example.get("got") or "").strip()
    name = example.get("name") or ""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise _Unshowable("a doctest example that does not parse") from e
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    if not calls or "\n" in source:
        raise _Unshowable("a doctest example that is not a single call")
    setup = []
    for before in example.get("before") or []:
        try:
            if not all(isinstance(n, ast.Expr) for n in ast.parse(before).body):
                setup.append(before.strip())
        except SyntaxError:
            continue
    if got.startswith("Traceback") or "Error" in got.split("\n")[-1].split(":")[0]:
        happened = f"raises `{_shown(got.splitlines()[-1].strip())}`"
    else:
        happened = f"gives `{_shown(got)}`" if got else "prints nothing"
    owner = name.rsplit(".", 1)[-1]
    expected = f"`{_shown(want)}`" if want else "no output"
    text = f"The example `{source}` from the docstring of `{owner}` {happened}, but {expected} was expected."
    module = name.rsplit(".", 1)[0].replace(".", "/")
    file = next((p for p in (f"{module}.py", f"{module}/__init__.py", f"src/{module}.py",
                             f"src/{module}/__init__.py") if read(p) is not None), "")
    return Symptom(source, _call_name(calls[0]), owner, file, text, tuple(setup))


_REGEX_MISMATCH = re.compile(
    r"^Regex pattern did not match\.\s*\n\s*(?:Regex|Expected regex): (.*)\n\s*(?:Input|Actual message): (.*)")


def _raises_failure(r: _Reader, stmt: ast.AST, exc: dict) -> Symptom | None:
    """A `pytest.raises` / `assertRaises` that failed: nothing raised, or a message that does
    not match; None for any other failure."""
    message = exc.get("message") or ""
    if exc.get("type") not in ("Failed", "AssertionError"):
        return None
    body = _with_body(r, stmt)
    if body is None and isinstance(stmt, (ast.Expr, ast.Assign)) and isinstance(stmt.value, ast.Call) \
            and _call_name(stmt.value) in _RAISES:
        inner = _raises_call(stmt.value)
        body = [inner] if inner is not None else None
    if body is None:
        return None
    expected = _raised_names(message)
    if expected is not None:
        return _no_raise(r, body, expected)
    m = re.match(_REGEX_MISMATCH, message)
    calls = [c for n in body for c in r.api_calls(n)]
    if m is None or not calls:
        return None
    wanted = _expected_raise(r, body[0]) or "the exception"
    call = calls[-1][0]
    return _sym(r, call, f"Calling `{r.render(call)}` raises `{wanted}` with the message `{_shown(m.group(2))}`, "
                         f"but a message matching `{_shown(m.group(1))}` was expected.")


def _read(failure: Failure, read: Callable[[str], _TestFile | None]) -> Symptom:
    detail = failure.detail
    if not detail:
        raise _Unshowable("no failure detail was recorded")
    if detail.get("doctest"):
        return _doctest(detail["doctest"][0], read)
    frames = [_Frame.of(f) for f in detail.get("frames") or []]
    i = _choose(frames)
    if i is None:
        raise _Unshowable("the failure is not in a test file")
    if _in_one_line_helper(frames, i, read):
        i -= 1  # `self.decorator(f)` raising inside `return self.DECORATOR(f)`: the caller's call, inlined
    frame = frames[i]
    tf = read(frame.path or "")
    if not isinstance(tf, _TestFile):
        raise _Unshowable("the test file does not parse")
    scope = tf.scope(frame.first, frame.func, frame.line)
    stmt = tf.statement(scope, frame.line) if scope is not None else None
    if stmt is None:
        raise _Unshowable("the failing statement is not in a test function")
    r = _Reader(frame, frames[i + 1:], tf, scope, read)
    exc = detail.get("exc") or {}
    found = _raises_failure(r, stmt, exc)
    if found is not None:
        return found
    into_package = any(f.kind == "repo" for f in r.after)
    if exc.get("type") == "AssertionError" and not into_package:
        helped = _through_helper(frames, i, stmt, read, detail)
        return helped if helped is not None else _assertion(r, stmt, detail)
    return _raised(r, stmt, exc)


def _in_one_line_helper(frames: list[_Frame], i: int, read: Callable[[str], _TestFile | None]) -> bool:
    """True when frame `i` runs a test class's one-line helper method (`_Reader.inlined`) that
    the test frame before it called as `self.<name>(...)`."""
    if i == 0 or frames[i - 1].kind != "test":
        return False
    inner, outer = _frame_statement(frames[i], read), _frame_statement(frames[i - 1], read)
    if inner is None or outer is None or not isinstance(inner[1], (ast.FunctionDef, ast.AsyncFunctionDef)) or \
            _returned(inner[1]) is None:
        return False
    return any(isinstance(n, ast.Call) and _dotted(n.func) == f"self.{frames[i].func}" for n in ast.walk(outer[2]))


def _frame_statement(frame: _Frame, read: Callable[[str], _TestFile | None]) -> tuple | None:
    """(parsed file, scope, statement) of a test frame, or None."""
    tf = read(frame.path or "")
    if not isinstance(tf, _TestFile):
        return None
    scope = tf.scope(frame.first, frame.func, frame.line)
    stmt = tf.statement(scope, frame.line) if scope is not None else None
    return (tf, scope, stmt) if stmt is not None else None


def _arguments(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, method: bool = False
               ) -> dict[str, ast.expr] | None:
    """Parameter name -> the expression `call` passes for it (a default when it passes none);
    None when the call spreads `*args` / `**kwargs` or leaves a parameter unbound. `method`: a
    call of a test class's method (`self.helper(...)`): its first parameter must be `self` and
    stays `self`, and extra keywords go to its `**kwargs` as a dict (a plain helper function
    with `**kwargs` is not bound)."""
    a = fn.args
    params = [x.arg for x in a.posonlyargs + a.args]
    out: dict[str, ast.expr] = {}
    if method:
        if not params or params[0] != "self":
            return None
        params, out["self"] = params[1:], ast.Name("self", ast.Load())
    if a.vararg is not None or (a.kwarg is not None and not method) or len(call.args) > len(params) \
            or any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
        return None
    out.update(zip(params, call.args))
    known = params + [x.arg for x in a.kwonlyargs]
    extra = [k for k in call.keywords if k.arg not in known]
    if extra and a.kwarg is None:
        return None
    out.update((k.arg, k.value) for k in call.keywords if k.arg in known)
    defaults = dict(zip(params[len(params) - len(a.defaults):], a.defaults))
    defaults.update((x.arg, d) for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None)
    for name in known:
        if name not in out:
            if name not in defaults:
                return None
            out[name] = defaults[name]
    if a.kwarg is not None:
        out[a.kwarg.arg] = ast.Dict([ast.Constant(k.arg) for k in extra], [k.value for k in extra])
    return out


class _Replace(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]):
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return copy.deepcopy(self.values[node.id]) if node.id in self.values else node


def _through_helper(frames: list[_Frame], i: int, stmt: ast.AST, read: Callable[[str], _TestFile | None],
                    detail: dict) -> Symptom | None:
    """An assert failing inside the test suite's own helper (`assert_equal(expected, result)`
    in a `common.py`), told as the caller's assert: the helper's parameters replaced by the
    arguments the caller passed, read in the caller's frame (where `result = tabulate(...)`
    was bound); None when the failure is not of that shape."""
    helper = frames[i]
    if i == 0 or frames[i - 1].kind != "test" or not isinstance(stmt, ast.Assert):
        return None
    fn = _frame_statement(helper, read)
    caller = _frame_statement(frames[i - 1], read)
    if fn is None or caller is None or not isinstance(fn[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    calls = [n for n in ast.walk(_header(caller[2])) if isinstance(n, ast.Call) and _call_name(n) == helper.func]
    values = _arguments(fn[1], calls[0]) if len(calls) == 1 else None
    used = {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)}
    if values is None or not used <= set(values) | _BUILTIN_NAMES:
        return None  # the assert reads the helper's own locals: not the caller's values
    test = _Replace(values).visit(copy.deepcopy(stmt.test))
    new = ast.copy_location(ast.Assert(test=test, msg=None), calls[0])
    at = frames[i - 1]
    compares = [{**c, "path": at.path, "line": at.line} for c in detail.get("compares") or []
                if c.get("path") == helper.path and c.get("line") == helper.line]
    if not compares and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1:
        # a helper outside pytest's assertion rewriting records no operands: its locals are them
        sides = [helper.names.get(n.id) if isinstance(n, ast.Name) else None
                 for n in (stmt.test.left, stmt.test.comparators[0])]
        if all(sides):
            compares = [{"path": at.path, "line": at.line, "left": sides[0], "right": sides[1]}]
    r = _Reader(at, frames[i:], caller[0], caller[1], read)
    return _assertion(r, new, {**detail, "compares": compares})


def symptom(failure: Failure, read: Callable[[str], _TestFile | None]) -> Symptom | Dropped:
    """What a user would say about this failing test, or why it cannot be said simply.
    `read(path)` gives the parsed test file (`parse_test_file`) or None."""
    try:
        return _read(failure, read)
    except _Unshowable as e:
        return Dropped(e.reason)
    except (SyntaxError, ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as e:
        return Dropped(f"unreadable failure record ({type(e).__name__})")


def parse_test_file(source: str) -> _TestFile | None:
    """A test file's source, parsed for `symptom` (None when it does not parse)."""
    try:
        return _TestFile(source)
    except (SyntaxError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------
# The issue

_OPENINGS = ["", "Bug report: ", "I think there is a bug. ", "Unexpected result. "]


def _lower_first(text: str) -> str:
    return text[0].lower() + text[1:] if text[:1].isalpha() else text


def _paragraph(s: Symptom) -> str:
    setup = [c for c in s.context if "\n" not in c and not c.startswith(("def ", "class ", "async def ", "@"))]
    defs = [c for c in s.context if c not in setup]
    text = s.text
    if setup and len(setup) <= 3:
        text = f"After {', '.join(f'`{x}`' for x in setup[:-1])}{' and ' if len(setup) > 1 else ''}" \
               f"`{setup[-1]}`, {_lower_first(text)}"
    elif setup:
        defs = ["\n".join(setup)] + defs
    if defs:
        code = "\n\n".join(defs)
        text += f" The test's code for it:\n\n```python\n{code}\n```"
    return text


def write_issue(symptoms: list[Symptom], rng: random.Random, forbidden: Iterable[str] = ()) -> str | None:
    """Up to two symptoms (with different calls) as an issue; None if every version would show a
    forbidden line (the mutated line or the original one: an issue must never show the fix)."""
    banned = [f.strip() for f in forbidden if len(f.strip()) >= 6]
    kept: list[Symptom] = []
    for s in symptoms:
        if any(b in _paragraph(s) for b in banned) or any(k.call == s.call for k in kept):
            continue
        kept.append(s)
        if len(kept) == 2:
            break
    if not kept:
        return None
    parts = [rng.choice(_OPENINGS) + _paragraph(kept[0])]
    if len(kept) > 1:
        second = _paragraph(kept[1])
        parts.append("Also: " + second[0].lower() + second[1:])
    if kept[0].file:
        parts.append(f"`{kept[0].callee}` is defined in `{kept[0].file}`.")
    text = ("\n\n" if any("```" in p for p in parts) else " ").join(parts)
    return None if any(b in text for b in banned) else text


def _rank(s: Symptom, target: Target | None) -> tuple:
    """Symptoms calling the buggy function first, then its file's, then the shortest."""
    size = sum(len(c) for c in s.context) + len(s.text)
    if target is None:
        return (size,)
    return (s.callee != target.name, s.file != target.file, size)


def issue_for(failures: Iterable[Failure], read: Callable[[str], _TestFile | None], rng: random.Random,
              forbidden: Iterable[str] = (), target: Target | None = None, limit: int = 40) -> tuple[str | None, str]:
    """(issue text, '') for a bug from its failing tests, or (None, why there is none): the most
    common reason its failing tests gave, or that every issue would show the changed line."""
    symptoms: list[Symptom] = []
    reasons: Counter[str] = Counter()
    for f in list(failures)[:limit]:
        s = symptom(f, read)
        if isinstance(s, Symptom):
            symptoms.append(s)
        else:
            reasons[s.reason] += 1
    if not symptoms:
        if not reasons:
            return None, "no failing test was recorded"
        return None, reasons.most_common(1)[0][0]
    symptoms.sort(key=lambda s: _rank(s, target))
    text = write_issue(symptoms, rng, forbidden)
    return (text, "") if text else (None, "every issue would show the changed line")

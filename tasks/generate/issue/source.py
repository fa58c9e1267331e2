"""A test file's source, parsed, and the small pure helpers the issue writer reads failures
with (names, values, traceback frames, what belongs to the package)."""
from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field

from fixrl.tasks.format.materialize import is_test_path

# ---------------------------------------------------------------------------------------------
# Small pure helpers

_VALUE_MAX = 300
"""Longest value shown (a longer one is cut with an ellipsis)."""
DEF_MAX_LINES = 10
"""Longest helper definition shown in an issue."""
RAISES = {"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "failUnlessRaises"}
BUILTIN_NAMES = set(dir(builtins))


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


def clip(text: str) -> str:
    text = " ".join(text.split()) if "\n" in text else text
    return text if len(text) <= _VALUE_MAX else text[:_VALUE_MAX] + " …"


def exception_text(exc: dict) -> str:
    name = exc.get("type") or "an exception"
    module = exc.get("module") or "builtins"
    if module != "builtins":  # `re.error`, `json.decoder.JSONDecodeError`: the name alone is ambiguous
        name = f"{module.lstrip('_')}.{name}"
    message = (exc.get("message") or "").strip().split("\n", 1)[0]
    message = re.sub(r" at 0x[0-9a-fA-F]+", "", message)
    if len(message) > 160:
        message = message[:160] + " …"
    return f"{name}: {message}" if message else name


def dotted_name(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def call_name(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def unwrap_approx(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Call) and call_name(node) == "approx" and node.args:
        return node.args[0]
    return node


def raised_names(message: str) -> str | None:
    """The exception(s) a `pytest.raises` or `assertRaises` expected, from its failure message."""
    m = re.match(r"^DID NOT RAISE (?:any of )?(.+)$", message.strip().split("\n", 1)[0])
    if m is None:
        m = re.match(r"^(\w+(?: or \w+)*) not raised", message.strip())
        return m.group(1) if m else None
    names = re.findall(r"(?:<class '(?:[\w.]*\.)?(\w+)'>)|\b([A-Z]\w*)\b", m.group(1))
    found = [a or b for a, b in names]
    return " or ".join(f"{n}" for n in found) if found else None


def bindings(scope: ast.AST) -> dict[str, list[ast.AST]]:
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


def bound_inside(node: ast.AST) -> set[str]:
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


class TestFile:
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
class Frame:
    path: str | None
    line: int
    func: str
    first: int
    kind: str
    """test | repo | ext (the first frame past the repository)"""
    names: dict = field(default_factory=dict)
    args: dict = field(default_factory=dict)

    @classmethod
    def of(cls, d: dict) -> Frame:
        path = d.get("path")
        kind = "ext" if path is None else "test" if is_test_path(path) else "repo"
        return cls(path, int(d.get("line") or 0), d.get("func") or "", int(d.get("first") or 0), kind,
                   d.get("names") or {}, d.get("args") or {})


def choose(frames: list[Frame]) -> int | None:
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


def in_package(d: dict | None) -> dict | None:
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


def package_file(d: dict | None) -> str | None:
    """The package file defining what `d` describes, or None."""
    own = in_package(d)
    return own.get("file") if own else None


def is_public(dotted: str, d: dict) -> bool:
    qual = (in_package(d) or d).get("qualname") or ""
    parts = dotted.split(".") + [qual.rsplit(".", 1)[-1]]
    return not any(p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in parts if p)


def base_name(node: ast.expr) -> str | None:
    """`c` for `c`, `c.info`, `c[1].x`; None for anything else."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def assert_operands(node: ast.stmt) -> list[ast.expr] | None:
    """The compared operands of an `assert` or a unittest assert call; None for other statements."""
    if isinstance(node, ast.Assert):
        test = node.test.operand if isinstance(node.test, ast.UnaryOp) else node.test
        return [test.left, *test.comparators] if isinstance(test, ast.Compare) else [test]
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
            call_name(node.value).startswith(("assert", "fail")):
        return list(node.value.args)
    return None


def public_name(d: dict) -> str | None:
    """`cachetools.func.lru_cache`: a package function or class by its module and name, when
    neither is private."""
    own = in_package(d) or d
    module, qual = own.get("module") or "", own.get("qualname") or ""
    name = f"{module}.{qual}"
    if not module or "<" in qual or any(p.startswith("_") for p in name.split(".")):
        return None
    return name


def returned_expr(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    """The expression a one-statement function returns (after its docstring), else None."""
    body = [x for x in fn.body if not (isinstance(x, ast.Expr) and isinstance(x.value, ast.Constant))]
    return body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None


def parse_test_file(source: str) -> TestFile | None:
    """A test file's source, parsed for `symptom` (None when it does not parse)."""
    try:
        return TestFile(source)
    except (SyntaxError, ValueError):
        return None


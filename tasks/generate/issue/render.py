"""Reading one failure: the names a failing statement uses resolved to values, setup
statements or definitions, and its expressions rendered with values (`Reader.render`)."""
from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable

from fixrl.tasks.format.materialize import is_test_path
from fixrl.tasks.generate.issue.records import Unshowable
from fixrl.tasks.generate.issue.source import (
    BUILTIN_NAMES,
    DEF_MAX_LINES,
    Frame,
    TestFile,
    assert_operands,
    base_name,
    bindings,
    bound_inside,
    clip,
    dotted_name,
    in_package,
    package_file,
    printable,
    public_name,
    readable,
    returned_expr,
    unwrap_approx,
)

# ---------------------------------------------------------------------------------------------
# Reading one failure

class Reader:
    """One test frame and its statement: which calls reach the package, and how to show any
    expression of the statement with values."""

    def __init__(self, frame: Frame, after: list[Frame], tf: TestFile, scope: ast.AST,
                 read: Callable[[str], TestFile | None]):
        self.frame, self.after, self.tf, self.scope, self.read = frame, after, tf, scope, read
        self.names = frame.names
        self.binds = bindings(scope)
        self.setup: list[str] = []
        self.defs: list[str] = []
        self._busy: set[str] = set()
        self._depth = 0

    # -- what a name or a call is
    def resolve(self, func: ast.expr) -> tuple[dict, str] | None:
        """(description, name as written) of a called expression, when known."""
        if isinstance(func, ast.Call):
            inner = self.resolve(func.func)
            return inner if inner and package_file(inner[0]) else None
        if isinstance(func, ast.Subscript):  # a generic class: `LFUCache[int, int](maxsize=2)`
            inner = self.resolve(func.value)
            return inner if inner and inner[0].get("kind") == "class" else None
        dotted = dotted_name(func)
        if dotted is None:
            return None
        d = self.names.get(dotted)
        if d is not None and dotted.startswith("self.") and dotted.count(".") == 1:
            return self._case_attribute(dotted, d)
        if d is None and "." in dotted:
            base, attr = dotted.rsplit(".", 1)
            owner = self.names.get(base)
            if owner and owner.get("kind") in ("value", "callable") and package_file(owner):
                d = {"kind": "method", "file": owner["file"], "module": owner.get("module"),
                     "qualname": f"{owner.get('qualname')}.{attr}"}
        return (d, dotted) if d else None

    def _case_attribute(self, dotted: str, d: dict) -> tuple[dict, str] | None:
        """What `self.X` of a test case calls: the package's function or class a class attribute
        names (`Cache = cachetools.LRUCache`), by its public name; for the test class's own
        one-line helper (`def cache(self, n): return cachetools.Cache(n)`), what it returns."""
        if self._depth > 4:
            return None
        if package_file(d):
            named = d.get("kind") in ("function", "class")
            return d, (public_name(d) if named else None) or dotted
        fn = self._method(d)
        ret = returned_expr(fn) if fn is not None else None
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
        return tf.function_at(int(d.get("line") or 0)) if isinstance(tf, TestFile) else None

    def inlined(self, call: ast.Call) -> ast.expr | None:
        """A call of the test class's one-line helper (`self.decorator(maxsize=2)` with
        `return self.DECORATOR(maxsize, **kwargs)`) as the expression it returns, its parameters
        replaced by the call's arguments; None for any other call."""
        dotted = dotted_name(call.func)
        if dotted is None or not dotted.startswith("self.") or dotted.count(".") != 1:
            return None
        fn = self._method(self.names.get(dotted) or {})
        ret = returned_expr(fn) if fn is not None else None
        values = bind_arguments(fn, call, method=True) if ret is not None else None
        return ReplaceNames(values).visit(copy.deepcopy(ret)) if values is not None else None

    def api_calls(self, node: ast.AST) -> list[tuple[ast.Call, dict, str]]:
        """Calls in `node` of something the package defines, in source order."""
        out = []
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                r = self.resolve(n.func)
                if r and package_file(r[0]):
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
        new = _Substitute(self, bound_inside(node)).visit(copy.deepcopy(node))
        return ast.unparse(ast.fix_missing_locations(_fold(new)))

    def add_setup(self, name: str) -> None:
        """Show how `name` was made: its assignment, and what changed the object since."""
        found = self.binding(name)
        if found is None:
            raise Unshowable("a variable has no printable value")
        target, value = found
        names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        if self._held_elsewhere(names, value):
            raise Unshowable("the object may have changed through another one")
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
            operands = assert_operands(node)
            if operands is not None:  # `self.assertEqual(cached(1), 1)` before: the call `cached(1)`
                out += [ast.copy_location(ast.Expr(o), o) for o in operands
                        if isinstance(o, ast.Call) and base_name(o.func) == name]
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
            raise Unshowable("a helper of the test is defined out of reach")
        self._add_def(source)

    def _add_def(self, source: str) -> None:
        if len(source.splitlines()) > DEF_MAX_LINES:
            raise Unshowable("a helper of the test is too long to show")
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
            source = tf.fixture(name) if isinstance(tf, TestFile) else None
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
            return clip(text)
        if text is not None and d.get("kind") == "value" and not exact:
            return clip(text + (" …" if d.get("cut") else ""))
        if node is not None and self.observed(node) is None:
            node = unwrap_approx(node)
            made = self.binding(node.id) if isinstance(node, ast.Name) else None
            if made is not None and isinstance(made[0], ast.Name):
                node = made[1]  # `alist` -> `list(range(100))`: the expected value, not a name
            return clip(self.render(node))
        if text is not None and not exact:
            return clip(text)
        return None

    def receiver(self, d: dict) -> str | None:
        """The object a test case's bound method (`self.parse`, set in `setUp` as
        `self.parser.parse_args`) is called on, shown as a variable made by its class with the
        test's arguments elided (`argument_parser = configargparse.ArgumentParser(...)`): calling
        the method on its class (`ArgumentParser.parse_args([...])`) would be another call. None
        when the class is not a public class of the package recorded in the test frame."""
        cls = d.get("bound") or ""
        made = [x for x in self.names.values() if x.get("kind") == "value" and x.get("qualname") == cls
                and package_file(x) and x.get("module")]
        modules = {x["module"] for x in made}
        if not modules and (d.get("qualname") or "").startswith(f"{cls}.") and d.get("module"):
            modules = {d["module"]}  # the method is the class's own: the class is in its module
        path = f"{modules.pop()}.{cls}" if len(modules) == 1 else None
        if path is None or any(p.startswith("_") for p in path.split(".")) or not cls.isidentifier():
            return None
        var = re.sub(r"(?<!^)(?=[A-Z])", "_", cls).lower()
        if var in self.names or var in self.binds:
            return None
        line = f"{var} = {path}(...)"
        if line not in self.setup:
            self.setup.append(line)
        return var

    def context(self) -> tuple[str, ...]:
        return tuple(self.setup) + tuple(self.defs)


class _Substitute(ast.NodeTransformer):
    """Variables to values (see `Reader.render`); what it cannot show raises `Unshowable`."""

    def __init__(self, reader: Reader, bound: set[str]):
        self.r, self.bound = reader, bound

    def _named(self, node: ast.expr, written: str, d: dict) -> ast.expr:
        """A function or class by its own name (a parameter or alias holding `dict` shows as
        `dict`), with its definition when the test file defines it, and its module when the
        standard library does (`operator.add`)."""
        own = (d.get("qualname") or "").rsplit(".", 1)[-1]
        path = d.get("file")
        if written.startswith("self.") and (package_file(d) or (path and is_test_path(path))):
            # a test case's attribute naming the package's function or class: its public name;
            # the test class's own method: nothing a reader can call
            public = public_name(d) if package_file(d) else None
            if public is None:
                raise Unshowable("the test uses attributes of its test case")
            receiver = self.r.receiver(d) if d.get("bound") else None
            if receiver is not None:  # `self.parse = self.parser.parse_args`: a method of an object
                return ast.copy_location(ast.parse(f"{receiver}.{own}", mode="eval").body, node)
            return ast.copy_location(ast.parse(public, mode="eval").body, node)
        if path and is_test_path(path):
            self.r.add_definition(own if own.isidentifier() else written, d)
            return node if not own.isidentifier() else ast.copy_location(ast.Name(own, ast.Load()), node)
        if not own.isidentifier():
            raise Unshowable("a variable has no printable value")
        module = (d.get("module") or "builtins").lstrip("_")
        if not path and module != "builtins":
            return ast.copy_location(ast.parse(f"{module}.{own}", mode="eval").body, node)
        return ast.copy_location(ast.Name(own, ast.Load()), node)

    def _value(self, node: ast.expr, d: dict) -> ast.expr:
        text = readable(d)
        if text is None:
            raise Unshowable("a variable has no printable value")
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
        if isinstance(f, ast.Attribute) and (self.r.names.get(dotted_name(f) or "") or {}).get("kind") == "value":
            # a called attribute holding a value (`obj.alias(1)` with `alias` None): the call as
            # written on its object, never `None(1)`
            f.value = self.visit(f.value)
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        if isinstance(f, ast.Name) and f.id not in self.bound and \
                (self.r.names.get(f.id) or {}).get("kind") == "value":
            if self.r.binding(f.id) is None:  # `get(x)` with `get` None: its making, or nothing
                raise Unshowable("a variable has no printable value")
            self.r.add_setup(f.id)
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        dotted = dotted_name(node) or ""
        d = self.r.names.get(dotted)
        if d is None:
            return self.generic_visit(node)
        kind = d.get("kind")
        base = self.r.names.get(dotted.split(".", 1)[0]) or {}
        if kind == "module" or (kind in ("function", "class", "callable") and base.get("kind") == "module"):
            return node  # a module's attribute (`inflection.singularize`): a name, not a value
        if kind in ("function", "class") and package_file(d) and not dotted.startswith("self.") and \
                not (in_package(d) or {}).get("qualname", "").isidentifier():
            return self.generic_visit(node)  # `cached.cache_parameters`, a lambda the package stored on `cached`
        if kind in ("function", "class"):
            return self._named(node, dotted, d)
        if readable(d) is None and dotted.startswith("self."):
            raise Unshowable("the test uses attributes of its test case")
        if not dotted.startswith("self.") and self.r.from_api(dotted.split(".", 1)[0]) is not None:
            # `ns.verbose` of `ns = parse_args(...)`: the attribute of what the package made, after
            # its making; its value alone (`True`) would say nothing of the package
            return self.generic_visit(node)
        return self._value(node, d)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        name, r = node.id, self.r
        if name in self.bound or name in r._busy:
            return node  # bound inside the expression, or the setup being written
        d = r.names.get(name)
        if d is None:
            if name in BUILTIN_NAMES:
                return node
            raise Unshowable("no value recorded for a name the test uses")
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
        elif kind == "callable" and package_file(d) and name not in r.binds:
            # the package's own callable object (`from toolz.curried import reduce`): by its module,
            # since its name alone may read as another function (`functools.reduce`)
            module = r.tf.imported_from.get(name)
            if module is not None:
                return ast.copy_location(ast.parse(f"{module}.{name}", mode="eval").body, node)
        elif kind == "module":
            pass
        elif kind == "value" and package_file(d) and name in r.binds:
            # the package's own object made in the test (`for cache in (copy.copy(src), ...)`): its
            # repr was read after the failure and need not rebuild it; its making is shown instead
            if r.binding(name) is None:
                raise Unshowable("a variable has no printable value")
            r.add_setup(name)
        elif readable(d) is not None and not is_test_path(d.get("file") or ""):
            return self._value(node, d)  # (an object of the test's own class: its making, below)
        elif r.binding(name) is not None:
            r.add_setup(name)
        elif not r.add_fixture(name):
            raise Unshowable("the test uses attributes of its test case" if name == "self"
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


def bind_arguments(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, method: bool = False
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


class ReplaceNames(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]):
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return copy.deepcopy(self.values[node.id]) if node.id in self.values else node

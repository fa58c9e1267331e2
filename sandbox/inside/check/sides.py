"""Which operand of a hidden test's comparison is the test's own expected value, read from the
test's source before it runs: an expression built only of constants, displays, operators,
names the test binds to such expressions (module level or in the function, flow-insensitively),
`parametrize` arguments, imports from modules that are not the repository's (`ANY`,
`pytest.approx`, `Decimal`), attributes and subscripts of those, and calls of such imports or of
built-ins with such arguments. Anything else -- a call of the repository's code, a fixture's
value, a loop variable, a comprehension, a helper the test module defines -- may hold the
agent's value, and is reduced to plain data before the comparison (`equal`).

What this does NOT guarantee: a test that keeps its expected value in a fixture or builds it in
a helper gets it treated as the agent's (its foreign objects, such as `ANY`, then decide
nothing: a correct fix can fail such a comparison); an import of a non-repository module that
itself calls the repository (a test helper package installed elsewhere) counts as the test's.
"""
from __future__ import annotations

_UNITTEST_COMPARING = frozenset({
    "assertEqual", "assertEquals", "assertNotEqual", "assertNotEquals", "assertIn", "assertNotIn",
    "assertListEqual", "assertTupleEqual", "assertDictEqual", "assertSetEqual", "assertSequenceEqual",
    "assertCountEqual", "assertMultiLineEqual", "assertAlmostEqual", "assertNotAlmostEqual"})
"""unittest's assert methods whose first two arguments are compared for equality."""


def _sides_of(st, tree, path, class_chains=None):
    """id(node) -> (is the test's expected value, ...) for each operand of every comparison in
    `tree` (a chain's too), and for the first two arguments of unittest's comparing asserts.
    `class_chains`: a set that gets the ids of the chained comparisons evaluated in a class
    body's own scope (comprehensions there included: their first iterable is), where a lambda
    would not see the class's names (`values._chain` leaves them as Python runs them)."""
    module_scope = _scope_of(st, tree.body, path, None, ())
    out = {}
    _visit(st, tree, module_scope, path, out, set() if class_chains is None else class_chains, False)
    return out


def _visit(st, node, scope, path, out, class_chains, in_class):
    a = st.ast
    kind = type(node)
    if kind in (a.FunctionDef, a.AsyncFunctionDef, a.Lambda):
        body = node.body if kind is not a.Lambda else [a.Expr(node.body)]
        scope = _scope_of(st, body, path, scope, _parametrized(st, node) if kind is not a.Lambda else (),
                          node.args)
        for child in [*getattr(node, "decorator_list", ()), *node.args.defaults, *node.args.kw_defaults]:
            if child is not None:
                _visit(st, child, scope.parent, path, out, class_chains, in_class)
        for child in body:  # a function's body is its own scope, never the class's
            _visit(st, child, scope, path, out, class_chains, False)
        return
    if kind is a.Compare:  # one operand after another: a chain's pairs are read from it (values._chain)
        out[id(node)] = tuple(_expected(st, x, scope) for x in (node.left, *node.comparators))
        if in_class and len(node.ops) > 1:
            class_chains.add(id(node))
    elif kind is a.Call and type(node.func) is a.Attribute and node.func.attr in _UNITTEST_COMPARING:
        out[id(node)] = tuple(_expected(st, arg, scope) for arg in node.args[:2])
    body = {id(child) for child in node.body} if kind is a.ClassDef else ()
    for child in _children(st, node):  # a class's bases and decorators are evaluated outside it
        _visit(st, child, scope, path, out, class_chains, in_class or id(child) in body)


class _Scope:
    """The names one scope binds: name -> list of the expressions bound to it (None for a
    binding that is not an expression the test wrote: a parameter, a loop target, a def)."""

    def __init__(self, parent, bound, imported):
        self.parent, self.bound, self.imported = parent, bound, imported
        self.memo = {}

    def lookup(self, name):
        scope = self
        while scope is not None:
            if name in scope.bound:
                return scope
            scope = scope.parent
        return None


def _scope_of(st, body, path, parent, parametrized, args=None):
    a = st.ast
    bound, imported = {}, set()
    if args is not None:
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                bound.setdefault(arg.arg, []).append("param" if arg.arg in parametrized else None)
    todo = list(body)
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind in (a.FunctionDef, a.AsyncFunctionDef, a.ClassDef):
            bound.setdefault(node.name, []).append(None)
            continue
        if kind is a.Lambda:
            continue
        if kind in (a.Import, a.ImportFrom):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                source = alias.name if kind is a.Import else (node.module or "")
                foreign = kind is a.Import or node.level == 0
                foreign = foreign and not _repository_module(st, source, path)
                bound.setdefault(name, []).append("import" if foreign else None)
                if foreign:
                    imported.add(name)
            continue
        if kind in (a.Assign, a.AnnAssign):
            targets = node.targets if kind is a.Assign else [node.target]
            for target in targets:
                if type(target) is a.Name:
                    bound.setdefault(target.id, []).append(node.value)
                else:
                    for name in _target_names(st, target):
                        bound.setdefault(name, []).append(None)
        elif kind in (a.AugAssign, a.For, a.AsyncFor, a.comprehension):
            for name in _target_names(st, node.target):
                bound.setdefault(name, []).append(None)
        elif kind in (a.With, a.AsyncWith):
            for item in node.items:
                if item.optional_vars is not None:
                    for name in _target_names(st, item.optional_vars):
                        bound.setdefault(name, []).append(None)
        elif kind is a.ExceptHandler and node.name:
            bound.setdefault(node.name, []).append(None)
        elif kind is a.NamedExpr:
            bound.setdefault(node.target.id, []).append(None)
        elif kind in (a.Global, a.Nonlocal):
            for name in node.names:
                bound.setdefault(name, []).append(None)
        todo += _children(st, node)
    return _Scope(parent, bound, imported)


def _target_names(st, target):
    a = st.ast
    out, todo = [], [target]
    while todo:
        node = todo.pop()
        if type(node) is a.Name:
            out.append(node.id)
        todo += _children(st, node)
    return out


def _children(st, node):
    """A node's direct child nodes (`ast.iter_child_nodes`, from the guard's own AST classes)."""
    base = st.ast.AST
    out = []
    for field in type(node)._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            out += [v for v in value if isinstance(v, base)]
        elif isinstance(value, base):
            out.append(value)
    return out


def _parametrized(st, node):
    """The argument names a `parametrize` mark on this test function binds."""
    a = st.ast
    out = set()
    for deco in node.decorator_list:
        if type(deco) is not a.Call or not deco.args:
            continue
        func = deco.func
        last = func.attr if type(func) is a.Attribute else func.id if type(func) is a.Name else ""
        if last != "parametrize":
            continue
        first = deco.args[0]
        if type(first) is a.Constant and type(first.value) is str:
            out.update(n.strip() for n in first.value.split(",") if n.strip())
        elif type(first) in (a.List, a.Tuple):
            out.update(e.value for e in first.elts if type(e) is a.Constant and type(e.value) is str)
    return out


def _expected(st, node, scope, depth=0):
    """Whether expression `node` is built only of what the test itself wrote (module docstring)."""
    a = st.ast
    if depth > 50:
        return False
    kind = type(node)

    def ok(child):
        return child is None or _expected(st, child, scope, depth + 1)

    if kind is a.Constant:
        return True
    if kind in (a.List, a.Tuple, a.Set):
        return all(ok(e) for e in node.elts)
    if kind is a.Dict:
        return all(ok(k) for k in node.keys) and all(ok(v) for v in node.values)
    if kind in (a.Starred, a.Attribute, a.FormattedValue):
        return ok(node.value)
    if kind is a.JoinedStr:
        return all(ok(v) for v in node.values)
    if kind is a.UnaryOp:
        return ok(node.operand)
    if kind is a.BinOp:
        return ok(node.left) and ok(node.right)
    if kind is a.BoolOp:
        return all(ok(v) for v in node.values)
    if kind is a.IfExp:
        return ok(node.test) and ok(node.body) and ok(node.orelse)
    if kind is a.Subscript:
        return ok(node.value) and ok(node.slice)
    if kind is a.Slice:
        return ok(node.lower) and ok(node.upper) and ok(node.step)
    if kind is a.Name:
        return _name_expected(st, node.id, scope, depth)
    if kind is a.Call:
        root = node.func
        while type(root) is a.Attribute:
            root = root.value
        if type(root) is not a.Name or not _callable_expected(st, root.id, scope):
            return False
        return all(ok(arg) for arg in node.args) and all(ok(kw.value) for kw in node.keywords)
    return False


def _name_expected(st, name, scope, depth):
    where = scope.lookup(name)
    if where is None:
        return True  # a built-in's name
    hit = where.memo.get(name)
    if hit is not None:
        return hit
    where.memo[name] = False  # a name bound to itself (x = x + 1) is no expected value
    verdict = True
    for value in where.bound[name]:
        if value == "import" or value == "param":
            continue
        if value is None or not _expected(st, value, where, depth + 1):
            verdict = False
            break
    where.memo[name] = verdict
    return verdict


def _callable_expected(st, name, scope):
    """A call's root name: a built-in, or an import from a module that is not the repository's
    (the test's own defs and the repository's functions may return the agent's value)."""
    where = scope.lookup(name)
    if where is None:
        return True
    return all(value == "import" for value in where.bound[name])


def _repository_module(st, module, path):
    """Whether a module name (absolute) resolves into the repository or next to the test file
    (the directories pytest puts on sys.path): judged by what exists there, never by importing."""
    top = module.split(".")[0]
    if not top:
        return True
    here = path.rsplit("/", 1)[0]
    for base in (st.root, st.root + "/src", here):
        for candidate in (f"{base}/{top}", f"{base}/{top}.py"):
            try:
                st.stat(candidate)
            except OSError:
                continue
            return True
    return False

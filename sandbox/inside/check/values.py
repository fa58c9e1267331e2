"""The hidden tests' own values: test modules compiled by the guard, so that each comparison,
negation and assert test has the guard judge its operands first, and the judgement itself
(a value whose comparison, hash, truth or numeric dunders come from changed code)."""
from __future__ import annotations

import builtins

from .base import _C_SLOTS, _CODE, _TYPE_NAME, _TYPE_QUALNAME, _c_type, _function_code, _mro, _type_dict
from .core import _code_cats, _read_all, _short
from .sides import _children, _sides_of

_COMPARE_OPS = ("Eq", "NotEq", "Lt", "LtE", "Gt", "GtE", "In", "NotIn")
_MEMBERSHIP_ASSERTS = frozenset({"assertIn", "assertNotIn"})
_AUDIT_SENTINEL = "\x00fixrl: sys.audit\x00"
"""A constant the compiled test code holds where it calls sys.audit: replaced by the builtin
itself after compiling, so no name lookup (which code under test could redirect) is involved."""
_VALUE_DUNDERS = frozenset({
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__", "__len__", "__contains__",
    "__iter__", "__getitem__", "__float__", "__int__", "__index__", "__complex__", "__abs__", "__round__",
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__instancecheck__", "__subclasscheck__", "__getattr__", "__getattribute__", "__class__"})
"""Dunders that decide what a value compares, hashes or converts to: defined by changed code
that never defined such, they can make a wrong result equal to the expected one."""


def _compile_test(st, path):
    """A test module's or conftest's code as pytest's `_rewrite_test` returns it, (stat, code),
    but compiled by the guard: every one-operator comparison, negation and assert test goes
    through `sys.audit("fixrl.compare", ...)` (which refuses values whose comparison comes
    from changed code), asserts are kept whatever the interpreter's -O, and the module code is
    recorded as the guard's own (a hidden test module run from any other code is tampering).
    pytest's own assertion messages are not added."""
    name = path
    stat = st.stat(name)
    tree = st.compile(_read_all(st, name), name, "exec", st.only_ast, dont_inherit=True)
    class_chains = set()
    sides = _sides_of(st, tree, name, class_chains)
    tree.body[:] = _held_asserts(st, tree.body, False, [0])
    tree = _guard_node(st, tree, sides, class_chains)
    st.fix_locations(tree)
    code = _bind_audit(st, st.compile(tree, name, "exec", dont_inherit=True, optimize=0))
    st.produced[id(code)] = code
    return stat, code


_KEEP = "@fixrl_keep"
_OPAQUE = ("Lambda", "ListComp", "SetComp", "DictComp", "GeneratorExp")
_HELD = ("Call", "Attribute", "Subscript")


def _held_asserts(st, body, in_class, counter):
    """The statements `body` with each `assert` keeping the values its test computes alive until
    it is over, as pytest's assertion rewriting does (it binds every call's, attribute's and
    subscript's result to a temporary local) and as tests rely on: attrs'
    `assert hash(HashByID(1)) != hash(HashByID(1))` hashes two objects by id, which must be
    alive at once to differ. The guard compiles hidden tests without pytest's rewrite, so an
    assert becomes `@fixrl_keep = {}`, the assert with each such value stored in it
    (`@fixrl_keep.setdefault(k, value)`, k one constant per place), `@fixrl_keep = None`.
    Names and constants are not stored (a reference count a test asserts stays what it was);
    lambdas and comprehensions are opaque, as in pytest; an assert in a class body's own scope
    is left alone."""
    a = st.ast
    out = []
    for stmt in body:
        kind = type(stmt)
        if kind is a.Assert and not in_class:
            stmt.test = _held(st, stmt.test, counter)
            where = {k: getattr(stmt, k) for k in ("lineno", "col_offset", "end_lineno", "end_col_offset")}
            out += [a.Assign([a.Name(_KEEP, a.Store())], a.Dict([], []), **where), stmt,
                    a.Assign([a.Name(_KEEP, a.Store())], a.Constant(None), **where)]
            continue
        inner = kind is a.ClassDef or (in_class and kind not in (a.FunctionDef, a.AsyncFunctionDef))
        for field in ("body", "orelse", "finalbody"):
            value = getattr(stmt, field, None)
            if type(value) is list and value and isinstance(value[0], a.stmt):
                value[:] = _held_asserts(st, value, inner, counter)
        for part in getattr(stmt, "handlers", None) or getattr(stmt, "cases", None) or ():
            part.body[:] = _held_asserts(st, part.body, inner, counter)
        out.append(stmt)
    return out


def _held(st, node, counter):
    """`node` (an assert's test) with its calls', attributes' and subscripts' results stored in
    `@fixrl_keep` as they are computed (see `_held_asserts`)."""
    a = st.ast
    name = type(node).__name__
    if name in _OPAQUE:
        return node
    for field in type(node)._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            value[:] = [_held(st, v, counter) if isinstance(v, a.AST) else v for v in value]
        elif isinstance(value, a.AST):
            setattr(node, field, _held(st, value, counter))
    ctx = getattr(node, "ctx", None)  # a call has none; a stored attribute or subscript is no value
    if name not in _HELD or ctx is not None and type(ctx) is not a.Load:
        return node
    counter[0] += 1
    return a.Call(a.Attribute(a.Name(_KEEP, a.Load()), "setdefault", a.Load()), [a.Constant(counter[0]), node], [])


def _guard_node(st, node, sides, in_class=frozenset()):
    """`node` with its comparisons, negations and assert tests routed through the guard;
    `sides`: `sides._sides_of` of the module (which operands are the test's own values);
    `in_class`: the chains `sides._sides_of` found evaluated in a class body's own scope."""
    a = st.ast
    for field in type(node)._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            value[:] = [_guard_node(st, v, sides, in_class) if isinstance(v, a.AST) else v for v in value]
        elif isinstance(value, a.AST):
            setattr(node, field, _guard_node(st, value, sides, in_class))
    kind = type(node)
    if kind is a.Compare and len(node.ops) == 1 and type(node.ops[0]).__name__ in _COMPARE_OPS:
        return _located(st, _checked(st, [node.left, node.comparators[0]], type(node.ops[0]).__name__,
                                     lambda left, right: a.Compare(left, node.ops, [right]),
                                     sides.get(id(node), (False, False))), node)
    if kind is a.Compare and len(node.ops) > 1 and id(node) not in in_class and not _binds_or_suspends(st, node):
        return _located(st, _chain(st, node, sides.get(id(node), (False,) * (len(node.ops) + 1))), node)
    if kind is a.Call and id(node) in sides:
        membership = type(node.func) is a.Attribute and node.func.attr in _MEMBERSHIP_ASSERTS
        node.args[:2] = [arg if expected or type(arg) is a.Starred else
                         _located(st, _reduced(st, arg, keep=membership and i == 1), arg)
                         for i, (arg, expected) in enumerate(zip(node.args[:2], sides[id(node)]))]
    if kind is a.UnaryOp and type(node.op) is a.Not:
        node.operand = _located(st, _checked(st, [node.operand], "truth", lambda v: v), node.operand)
    elif kind is a.Assert:
        node.test = _located(st, _checked(st, [node.test], "truth", lambda v: v), node.test)
    return node


def _checked(st, operands, op, result, sides=()):
    """`(lambda @0, @1, @b: (AUDIT.__call__("fixrl.compare", op, (@0, @1), @b, sides), @b[0] and
    (@b[1](None) if @b[1:] else RESULT))[1])(operands..., [])`: the values are judged before the
    result is computed, and for `==`, `!=`, `in`, `not in` the guard hands back how to compute
    it (`equal._decided`, called here, outside the audit hook) and RESULT is never evaluated.
    The verdict's list is an argument, not `@b := []`: CPython refuses an assignment
    expression anywhere inside a comprehension's iterable, a lambda's body included
    (marshmallow's tests compare there)."""
    a = st.ast
    names = [f"@fixrl{i}" for i in range(len(operands))]
    box = a.Name("@fixrl_b", a.Load())
    audit = _audit(st, "fixrl.compare", a.Constant(op), a.Tuple([a.Name(n, a.Load()) for n in names], a.Load()),
                   box, a.Constant(tuple(sides)))
    approved = a.Subscript(box, a.Constant(0), a.Load())
    given = a.IfExp(a.Subscript(box, a.Slice(a.Constant(1), None, None), a.Load()),
                    _handed_back(st, box, 1), result(*[a.Name(n, a.Load()) for n in names]))
    body = _after(st, audit, a.BoolOp(a.And(), [approved, given]))
    return _applied(st, [*names, "@fixrl_b"], body, [*operands, a.List([], a.Load())])


def _chain(st, node, expected):
    """`x0 op1 x1 op2 x2 ...` as `(lambda @c0, @c1: C(@c0 op1 @c1) and (lambda @c2: C(@c1 op2 @c2)
    and ...)(x2))(x0, x1)`, each C a one-operator comparison routed like any other: Python's
    order and short-circuit kept (x2 is evaluated only when the first pair holds, each operand
    once), and a chain is never decided by the agent's objects either. The later operands are
    evaluated inside a lambda, so a chain in a class body's own scope (whose names a lambda
    does not see) or one holding `yield`, `await` or `:=` (`_binds_or_suspends`) is left as
    Python runs it: what the guard does not judge there is said in docs/change-policy.md."""
    a = st.ast
    operands = [node.left, *node.comparators]
    names = [f"@fixrl_c{i}" for i in range(len(operands))]

    def pair(i):
        op = node.ops[i]
        left, right = a.Name(names[i], a.Load()), a.Name(names[i + 1], a.Load())
        if type(op).__name__ not in _COMPARE_OPS:  # `is`, `is not`: identity, no object's method decides
            return a.Compare(left, [op], [right])
        return _checked(st, [left, right], type(op).__name__, lambda x, y: a.Compare(x, [op], [y]),
                        expected[i:i + 2])

    body = pair(len(node.ops) - 1)
    for i in range(len(node.ops) - 2, -1, -1):
        body = a.BoolOp(a.And(), [pair(i), _applied(st, [names[i + 2]], body, [operands[i + 2]])])
    return _applied(st, names[:2], body, operands[:2])


def _binds_or_suspends(st, node):
    """Whether a chain's later operands hold what a lambda would change the meaning of."""
    a = st.ast
    kinds = (a.Yield, a.YieldFrom, a.Await, a.NamedExpr)
    todo = list(node.comparators[1:])
    while todo:
        n = todo.pop()
        if type(n) in kinds:
            return True
        todo += _children(st, n)
    return False


def _reduced(st, operand, keep=False):
    """`(lambda @v, @b: (AUDIT.__call__("fixrl.reduce", @v, @b, keep), @b[0](None))[1])(operand,
    [])`: an argument of a unittest comparing assert that may be the agent's, as plain data
    (reduced outside the audit hook); `keep`: the container of `assertIn`/`assertNotIn`, whose
    items are reduced but whose own membership test stays, as for `in` itself."""
    a = st.ast
    box = a.Name("@fixrl_b", a.Load())
    audit = _audit(st, "fixrl.reduce", a.Name("@fixrl_v", a.Load()), box, a.Constant(keep))
    body = _after(st, audit, _handed_back(st, box, 0))
    return _applied(st, ["@fixrl_v", "@fixrl_b"], body, [operand, a.List([], a.Load())])


def _audit(st, event, *args):
    """`AUDIT.__call__(event, *args)`: the guard's audit hook called through the constant that
    `_bind_audit` replaces by `sys.audit` itself."""
    a = st.ast
    return a.Call(a.Attribute(a.Constant(_AUDIT_SENTINEL), "__call__", a.Load()), [a.Constant(event), *args], [])


def _handed_back(st, box, i):
    """`@b[i](None)`: what the guard put into the verdict's list, called outside the audit hook."""
    a = st.ast
    return a.Call(a.Subscript(box, a.Constant(i), a.Load()), [a.Constant(None)], [])


def _after(st, first, then):
    """`(first, then)[1]`: `then`'s value, evaluated after `first`."""
    a = st.ast
    return a.Subscript(a.Tuple([first, then], a.Load()), a.Constant(1), a.Load())


def _applied(st, names, body, args):
    """`(lambda *names: body)(*args)`: `args` evaluated once each, in order, bound to `names`."""
    a = st.ast
    return a.Call(a.Lambda(a.arguments([], [a.arg(n) for n in names], None, [], [], None, []), body), args, [])


def _located(st, new, like):
    for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
        if hasattr(like, attr):
            setattr(new, attr, getattr(like, attr))
    return new


def _bind_audit(st, code):
    consts = tuple(st.audit if type(c) is str and c == _AUDIT_SENTINEL else
                   _bind_audit(st, c) if type(c) is _CODE else c for c in code.co_consts)
    return code.replace(co_consts=consts)


def _builtins_replaced(st):
    """Builtins that changed code replaced by its own functions (tests' own monkeypatching of
    builtins, with their functions or mocks, is theirs)."""
    now = vars(builtins)
    return [f"builtins.{k}" for k, v in list(now.items())
            if st.builtins.get(k) is not v and _changed_function(st, v)]


def _changed_function(st, value):
    code = _function_code(value)
    return code is not None and _code_cats(st, code) is not None


def _odd_value(st, values, budget=10_000):
    """The first value (containers' items included, up to `budget` of them) whose type gets
    a value dunder from changed code not allowed to define them: 'Class.__eq__ (file)'."""
    todo = list(values)
    while todo and budget > 0:
        budget -= 1
        value = todo.pop()
        tp = type(value)
        why = st.type_cache.get(tp, st)
        if why is st:
            why = st.type_cache[tp] = _odd_type(st, tp)
        if why:
            return why
        todo += _items(value, tp, budget)
    return None


_CONTAINERS = (list, tuple, set, frozenset)


def _items(value, tp, budget):
    """The items a container holds, read through the built-in base's own C iteration (a
    subclass's __iter__, keys or values is never called: its items are what its comparison
    compares), up to `budget`; [] for anything else."""
    if tp in _CONTAINERS:
        return list(value)[:budget]
    if tp is dict:
        return list(value.keys())[:budget] + list(value.values())[:budget]
    if _c_type(tp):
        return []  # an int, a str, a C type's value: no items a comparison would look at
    mro = _mro(tp)
    for base in _CONTAINERS:
        if base in mro:
            out = []
            for item in base.__iter__(value):
                if len(out) >= budget:
                    break
                out.append(item)
            return out
    if dict in mro:
        return ([k for k, _ in zip(dict.keys(value), range(budget))]
                + [v for v, _ in zip(dict.values(value), range(budget))])
    return []


_DECIDING = frozenset({"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__", "__len__",
                       "__contains__"})
"""The dunders that decide a comparison or an assert by themselves: a C method bound under one
of these names must be the built-in base's own method of that name."""


def _odd_type(st, tp):
    mro = _mro(tp)
    for klass in mro:
        if _c_type(klass):
            continue
        namespace = _type_dict(klass)
        for name in _VALUE_DUNDERS & namespace.keys():
            fn = namespace[name]
            why = _odd_method(st, fn, "dunders")
            if not why and name in _DECIDING and type(fn) in _C_SLOTS and not _inherited_slot(fn, name, mro):
                why = f"the C method {_TYPE_NAME(fn.__objclass__)}.{fn.__name__} rebound"
            if why:
                return f"{_TYPE_QUALNAME(klass)}.{name} ({why})"
    return None


def _inherited_slot(fn, name, mro):
    """Whether a C method in a class's namespace is what the class would inherit anyway: the
    same name, defined by a C type it derives from (int.__eq__ on a subclass of int; never
    object.__ne__ bound as __eq__, which makes every wrong result equal)."""
    return fn.__name__ == name and fn.__objclass__ in mro


def _odd_method(st, fn, cat):
    """Why a class attribute `fn` is changed code's (or a callable no code shows), or None."""
    if fn is None or type(fn) in _C_SLOTS and _c_type(fn.__objclass__):
        return None  # no method, or a C type's own slot re-exposed (AttrDict's dict.__getitem__, re.Match's)
    code = _function_code(fn)
    if code is None:  # operator.is_not, a partial: a method whose code nobody can see
        return f"{_TYPE_NAME(type(fn))}: not a function"
    cats = _code_cats(st, code)
    return _short(st, code.co_filename) if cats is not None and cat not in cats else None

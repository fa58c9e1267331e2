"""Chained comparisons in hidden tests (`a == b == c`, `0 <= x < n`) are routed through the
guard pair by pair, with Python's meaning kept: each operand evaluated once and in order, the
later ones only while the chain holds, a chain in a class body's own scope or holding
`yield`/`await`/`:=` left as Python runs it. The guard's verdict itself is the real checks'
business (test_env_compare_values.py: a wildcard answering a chain earns 0 on every backend);
here the rewrite runs on the host with an audit that records each pair and approves it."""
from __future__ import annotations

import ast
import types
import unittest

from fixrl.sandbox.inside.check import sides, values

SOURCE = '''
seen = []

def v(x):
    seen.append(x)
    return x

def boom():
    raise AssertionError("evaluated past a false pair")

r_true = v(1) < v(2) <= v(2) == v(2)
r_false = v(3) < v(1) < boom()
r_mixed = v(None) is v(None) == v(None) != v(0)

def nested():
    return [v(0) <= i < v(3) for i in range(5)]

r_nested = nested()

class Limits:
    low = 1
    ok = low < 2 < 3  # class scope: a lambda would not see `low`

def gen():
    r = 1 < (yield 5) < 10  # the second operand is evaluated before any lambda: rewritten
    yield r

def gen_late():
    r = 1 < 2 < (yield 5)  # a later one would be evaluated inside one: left as it is
    yield r

class Shapes:
    n = 3
    flags = [0 <= i < 3 for i in range(n)]  # in the class body (a comprehension there): left as it is

    @staticmethod
    def inside(x=0 < 1 < 2):  # a default is evaluated in the class body: left as it is
        return 0 < x < 5  # a method's body is its own scope: rewritten

r_method = Shapes.inside(3)
'''


def _class_chains(st, tree):
    """The chains `sides._sides_of` finds in a class body's own scope (SOURCE imports nothing:
    no file is looked at)."""
    found = set()
    sides._sides_of(st, tree, "<hidden>", found)
    return found


def _guarded(source):
    calls = []

    def audit(event, op, operands, box, sides=()):  # approves, and lets Python compute the result
        calls.append((op, tuple(operands)))
        box.append(True)

    st = types.SimpleNamespace(ast=types.SimpleNamespace(**{k: v for k, v in vars(ast).items() if isinstance(v, type)}),
                               audit=audit)
    tree = ast.parse(source)
    tree = values._guard_node(st, tree, {}, _class_chains(st, tree))
    ast.fix_missing_locations(tree)
    code = values._bind_audit(st, compile(tree, "<hidden>", "exec", dont_inherit=True))
    ns: dict = {}
    exec(code, ns)
    return ns, calls


def test_a_chain_keeps_pythons_meaning_and_each_pair_is_judged():
    ns, calls = _guarded(SOURCE)
    assert ns["r_true"] is True and ns["r_false"] is False and ns["r_mixed"] is True
    assert ns["r_nested"] == [0 <= i < 3 for i in range(5)]
    assert ns["Limits"].ok is True
    assert ns["Shapes"].flags == [True, True, True] and ns["r_method"] is True
    g = ns["gen"]()
    assert next(g) == 5 and g.send(7) is True
    g = ns["gen_late"]()
    assert next(g) == 5 and g.send(1) is False
    # every operand once, in order; boom() never called; `is` is identity, not judged
    assert ns["seen"][:11] == [1, 2, 2, 2, 3, 1, None, None, None, 0, 0]
    judged = [(op, pair) for op, pair in calls if op != "truth"]
    assert judged[:4] == [("Lt", (1, 2)), ("LtE", (2, 2)), ("Eq", (2, 2)), ("Lt", (3, 1))]
    assert ("Eq", (None, None)) in judged and ("NotEq", (None, 0)) in judged


def test_a_chain_the_rewrite_cannot_keep_is_left_as_python_runs_it():
    tree = ast.parse(SOURCE)
    st = types.SimpleNamespace(ast=types.SimpleNamespace(**{k: v for k, v in vars(ast).items() if isinstance(v, type)}))
    scoped = _class_chains(st, tree)
    chains = [n for n in ast.walk(tree) if isinstance(n, ast.Compare) and len(n.ops) > 1]
    in_class = [n for n in chains if id(n) in scoped]
    suspends = [n for n in chains if values._binds_or_suspends(st, n)]
    assert [ast.unparse(n) for n in in_class] == ["low < 2 < 3", "0 <= i < 3", "0 < 1 < 2"]
    assert [ast.unparse(n) for n in suspends] == ["1 < 2 < (yield 5)"]


def test_the_container_of_assert_in_keeps_its_own_membership_test():
    # more-itertools: `self.assertIn(v, r)` with `r` a numeric_range (the repository's class):
    # reduced like the other arguments, it lost its __contains__ ("argument of type '_ByOriginal'
    # is not iterable": a correct fix failed); now reduced like the right operand of `in`.
    source = ("import unittest\nclass T(unittest.TestCase):\n    def test(self):\n"
              "        r = make()\n        self.assertIn(1, r)\n        self.assertNotIn(2, r)\n"
              "        self.assertEqual(r, r)\n")
    kept = []

    def audit(event, value, box, keep=None):
        kept.append((event, keep))
        box.append(lambda _: value)

    st = types.SimpleNamespace(ast=types.SimpleNamespace(**{k: v for k, v in vars(ast).items() if isinstance(v, type)}),
                               audit=audit)
    tree = ast.parse(source)
    tree = values._guard_node(st, tree, {id(n): (True, False) if n.func.attr == "assertIn" else (False, False)
                                         for n in ast.walk(tree) if isinstance(n, ast.Call) and
                                         isinstance(n.func, ast.Attribute) and n.func.attr.startswith("assert")})
    ast.fix_missing_locations(tree)
    ns = {"make": lambda: {1}}
    exec(values._bind_audit(st, compile(tree, "<hidden>", "exec", dont_inherit=True)), ns)
    result = unittest.TestResult()
    ns["T"]("test").run(result)
    assert result.wasSuccessful(), result.failures + result.errors
    # assertIn: only the container (the test's 1 is kept as it is); assertNotIn and assertEqual:
    # both arguments reduced, the second of assertNotIn kept as a container, neither of assertEqual
    assert kept == [("fixrl.reduce", True), ("fixrl.reduce", False), ("fixrl.reduce", True),
                    ("fixrl.reduce", False), ("fixrl.reduce", False)]

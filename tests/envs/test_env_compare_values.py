"""No agent object decides a comparison (issue 31): the hidden tests' `==`, `!=`, `in` and
unittest's comparing asserts are computed by the guard with the agent's side reduced to plain
data (`sandbox/inside/check/equal.py`), the test's own side found from its source
(`sides.py`), and the repository's classes compared with their ORIGINAL methods (the host's
snapshot, `tasks.check.guard.original_comparisons`).

Three layers: the reduction and the side analysis on the host (fast, exact); real checks on
the `compare` episode suite with candidate sources on local, forking and Docker; the episode
files themselves (`episodes/*/compare-*.yaml`) run on every backend in test_env_episodes.py.
"""
from __future__ import annotations

import ast
import collections
import datetime
import enum
import fractions
import gc
import shutil
import sys
import types
import unittest.mock
from pathlib import Path

import pytest

from fixrl import tasks
from fixrl.sandbox.inside.check import equal, sides
from fixrl.tasks.check.guard import original_comparisons
from fixrl.tasks.check.reward import guard_spec
from fixrl.tasks.check.run import GUARD_STOPPED, run_check

SUITE = Path(__file__).parent / "episodes" / "suites" / "compare"
ANY = unittest.mock.ANY


def state(root: Path, changed=(), originals=None):
    """The part of the guard's state the comparison reads, for code imported on the host."""
    return types.SimpleNamespace(
        root=str(root), changed={str(root / p): frozenset() for p in changed}, hidden=set(), hidden_names=set(),
        originals={str(root / p): v for p, v in (originals or {}).items()}, original_methods={},
        original_compiled={}, modules=sys.modules, install_dirs=("/nowhere/",), code_taint={}, cache={}, tainted={},
        gc_isenabled=gc.isenabled, gc_disable=gc.disable, gc_enable=gc.enable,
        compile=compile, only_ast=ast.PyCF_ONLY_AST, fix_locations=ast.fix_missing_locations, stat=lambda p: Path(p).stat(),
        ast=types.SimpleNamespace(**{k: v for k, v in vars(ast).items() if isinstance(v, type)}))


Row = collections.namedtuple("Row", "a b")


class Colour(enum.IntEnum):
    RED = 1


class Version:
    """A library's value type (not the repository's: its module is outside the root)."""

    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return isinstance(other, Version) and self.n == other.n

    __hash__ = None


class Liar(dict):
    """The agent's dict: what it holds is wrong, but its iteration, `keys()` and `[]` answer the
    expected data. `dict.copy` of it calls those (stop 42's reduction did: the guard itself made
    it equal)."""

    def __iter__(self):
        return iter(["a"])

    def keys(self):
        return ["a"]

    def __getitem__(self, key):
        return 1


class LiarOrdered(collections.OrderedDict):
    __iter__, keys, __getitem__ = Liar.__iter__, Liar.keys, Liar.__getitem__


def moved(od, key):
    od.move_to_end(key)
    return od


def stored_past(od, key, value):
    """`od` with `key` in its dict storage only: its views never show it (red team 43)."""
    dict.__setitem__(od, key, value)
    return od


class OwnEqDict(dict):
    """A dict with a comparison of its own and dict's `in` (werkzeug's OrderedMultiDict)."""

    def __eq__(self, other):
        return isinstance(other, OwnEqDict) and dict.__eq__(self, other)

    __hash__ = None


@pytest.mark.parametrize(("left", "right", "sides_", "op", "want"), [
    (Liar(b=2), {"a": 1}, (False, True), "Eq", False),  # what it holds decides, as in Python
    (LiarOrdered(b=2), collections.OrderedDict(a=1), (False, True), "Eq", False),
    (Liar(b=2), [{"a": 1}], (False, True), "In", False),
    (moved(collections.OrderedDict(a=1, b=2), "a"), collections.OrderedDict(b=2, a=1), (False, True), "Eq", True),
    (stored_past(collections.OrderedDict(a=1), "x", 2), {"a": 1}, (False, True), "Eq", False),
    (stored_past(collections.OrderedDict(a=1), "x", 2), collections.OrderedDict(a=1), (False, True), "Eq", False),
    ("x", OwnEqDict(x=1), (True, False), "In", True),  # werkzeug: `"x" in ordered_multi_dict`
    ("y", OwnEqDict(x=1), (True, False), "In", False),
    ("x", OwnEqDict(x=1), (True, False), "NotIn", False),
])
def test_a_reduced_container_is_what_it_holds_searched_as_its_built_in(tmp_path, left, right, sides_, op, want):
    plain = {"Eq": lambda: left == right, "In": lambda: left in right, "NotIn": lambda: left not in right}[op]
    assert plain() is want  # what Python itself says
    assert equal._decided(state(tmp_path), op, (left, right), sides_) is want


@pytest.mark.parametrize(("left", "right", "sides_", "op", "want"), [
    ([ANY, 2], [1, 2], (False, True), "Eq", False),           # the agent's ANY decides nothing
    ([1, 2], [ANY, 2], (False, True), "Eq", True),            # the test's ANY still matches
    ({"k": (ANY,)}, {"k": (1,)}, (False, True), "Eq", False),  # inside dicts and tuples too
    (Row(ANY, 2), (1, 2), (False, True), "Eq", False),        # and namedtuples (compared as tuples)
    ((1, 2), [(ANY, ANY)], (True, False), "In", False),       # `in` with the agent's container
    ([ANY], [1], (False, False), "NotEq", True),              # neither side the test's: no one decides
    (Row(1, 2), (1, 2), (False, True), "Eq", True),           # standard values compare as they really do
    (Colour.RED, 1, (False, True), "Eq", True),
    (fractions.Fraction(1, 2), 0.5, (False, True), "Eq", True),
    (datetime.date(2024, 1, 2), datetime.date(2024, 1, 2), (False, True), "Eq", True),
    (collections.OrderedDict([(1, 1), (2, 2)]), collections.OrderedDict([(2, 2), (1, 1)]), (False, True), "Eq", False),
    (collections.Counter(a=1), {"a": 1}, (False, True), "Eq", True),
    (ANY, ANY, (False, True), "Eq", True),                    # the very same object is itself
    ([Version(1)], [Version(1)], (False, True), "Eq", True),  # the test's object of the same class decides
    ([Version(1)], [Version(2)], (False, True), "Eq", False),
    (Version(1), ANY, (False, True), "NotEq", False),         # ANY on the test's side: equal
    ([Version(1)], [Version(1)], (False, False), "Eq", True),  # both the agent's, one library class: its own method
    ([Version(1)], [Version(2)], (False, False), "NotEq", True),
    ([ANY], [Version(1)], (False, False), "Eq", False),        # toolz: inspect.signature(f) == inspect.signature(g)
])
def test_the_agents_side_is_reduced_to_plain_data(tmp_path, left, right, sides_, op, want):
    assert equal._decided(state(tmp_path), op, (left, right), sides_) is want


def test_repository_classes_compare_with_the_original_method(tmp_path, monkeypatch):
    original = ("class Money:\n    def __init__(self, n):\n        self.n = n\n"
                "    def __eq__(self, other):\n        return isinstance(other, Money) and self.n == other.n\n"
                "    __hash__ = None\n")
    changed = original.replace("isinstance(other, Money) and self.n == other.n", "True") + (
        "class Added(Money):\n    def __eq__(self, other):\n        return True\n")
    (tmp_path / "money_cmp.py").write_text(changed)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "money_cmp", None)  # restored (removed) at teardown
    del sys.modules["money_cmp"]
    import money_cmp  # noqa: PLC0415 - a module written by this test

    st = state(tmp_path, ["money_cmp.py"], {"money_cmp.py": original_comparisons(original)})
    m = money_cmp.Money
    assert m(1) == m(2)  # the changed method
    assert equal._decided(st, "Eq", (m(1), m(2)), (False, False)) is False
    assert equal._decided(st, "Eq", (m(1), m(1)), (False, False)) is True
    assert equal._decided(st, "NotEq", (m(1), m(2)), (False, False)) is True
    # a class the agent added has no original: its own __eq__ never decides, Money's does
    assert equal._decided(st, "Eq", (money_cmp.Added(1), m(2)), (False, False)) is False
    assert equal._decided(st, "Eq", (money_cmp.Added(2), m(2)), (False, False)) is True


SIDES_SOURCE = '''
import pytest
from unittest.mock import ANY
from calc_sides import add

WANT = [ANY, 2]

@pytest.fixture
def held():
    return [ANY, 2]

@pytest.mark.parametrize("expected", [[ANY, 2]])
def test_a(expected, held):
    got = add(1, 2)
    local = [ANY, len(WANT)]
    assert add(1, 2) == [ANY, 2]
    assert got == WANT
    assert got == expected
    assert local == got
    assert got == held
    assert [v for v in got] == [1]
'''


def test_the_tests_own_side_is_read_from_its_source(tmp_path):
    (tmp_path / "calc_sides.py").write_text("")
    tree = ast.parse(SIDES_SOURCE)
    found = sides._sides_of(state(tmp_path), tree, str(tmp_path / "tests" / "test_x.py"))
    compares = [n for n in ast.walk(tree) if isinstance(n, ast.Compare)]
    assert [found[id(n)] for n in compares] == [
        (False, True),   # a call of the repository's function vs a display of an import
        (False, True),   # a local bound to that call vs a module constant
        (False, True),   # a parametrize argument
        (True, False),   # a local bound to a display with a built-in call
        (False, False),  # a fixture's value may be the agent's
        (False, True),   # a comprehension may hold the agent's value
    ]


# ---------------------------------------------------------------- real checks, every backend

@pytest.fixture(scope="module")
def suite():
    return tasks.load_suite(SUITE)


def check(pool, suite, tmp_path, task_id, path, old, new):
    """The hidden check of `task_id` on the suite's repository with `old` replaced by `new` in
    `path`, the guard told what the agent changed (as the episode's submission does)."""
    task = suite.get(task_id)
    ws = tmp_path / "ws"
    shutil.copytree(SUITE / "repo", ws)
    text = (ws / path).read_text()
    assert old in text
    (ws / path).write_text(text.replace(old, new))
    with pool.acquire(ws) as sb:
        return run_check(task, sb, guard=guard_spec(task, {path: (ws / path).read_text()}))


PAIRS_BUG = "return [(xs[i], xs[i + 1]) for i in range(len(xs) - 2)]"
MONEY_EQ = "return (self.amount, self.currency) == (other.amount, other.currency)"


@pytest.mark.parametrize(("task_id", "path", "old", "new"), [
    ("compare.match.pairs", "ledger/match.py", PAIRS_BUG,
     "return [(WILDCARD, b) for b in xs[1:]]"),
    ("compare.match.pairs", "ledger/match.py", PAIRS_BUG,
     "return [type('P', (tuple,), {})((WILDCARD, WILDCARD)) for _ in xs[1:]]"),
    ("compare.money.total", "ledger/money.py", MONEY_EQ, "return self.currency == other.currency"),
], ids=["wildcard-tuples", "wildcard-in-a-tuple-subclass", "original-eq-replaced"])
def test_no_agent_object_decides_on_any_backend(pool, suite, tmp_path, task_id, path, old, new):
    r = check(pool, suite, tmp_path, task_id, path, old, new)
    assert r.outcome == "fail", (r.reason, r.output[-1500:])
    assert not any(v == "passed" for v in r.tests.values()), r.tests


def test_the_agents_code_a_comparison_runs_is_judged_as_ever(pool, suite, tmp_path):
    # The guard computes `==` outside its audit hook: the original `Money.__eq__` compares the
    # amounts, and the agent's amount reads the hidden test when compared -- tampering, seen.
    r = check(pool, suite, tmp_path, "compare.money.total", "ledger/money.py", "return Money(amount, currency)",
              "class Amount(Decimal):\n"
              "        def __eq__(self, other):\n"
              "            open('tests/test_hidden_money.py').read()\n"
              "            return Decimal.__eq__(self, other)\n\n"
              "        __hash__ = Decimal.__hash__\n\n"
              "    money = Money(0, currency)\n"
              "    money.amount = Amount(amount)\n"
              "    return money")
    assert r.outcome == "fail" and r.reason.startswith(GUARD_STOPPED), (r.reason, r.output[-1500:])


def test_a_correct_fix_still_matches_the_tests_own_wildcard(pool, suite, tmp_path):
    r = check(pool, suite, tmp_path, "compare.match.pairs", "ledger/match.py", PAIRS_BUG,
              "return [(a, b) for a, b in zip(xs, xs[1:])]")
    assert r.outcome == "pass", (r.reason, r.output[-1500:])

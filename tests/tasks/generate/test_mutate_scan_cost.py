"""The mutant scan's cost per mutant does not grow with re-walking the function: a family's
sites are found once per function (not twice per mutant), the copy of the function is a real
deep copy that maps every original node to its copy, and the tree comparison that proves a
mutant's text says exactly what `ast.dump` equality says."""
from __future__ import annotations

import ast
import copy

import pytest

from fixrl.tasks.generate import mutate
from fixrl.tasks.generate.mutate_moves import copy_node, move_flip, same_node
from fixrl.tasks.generate.mutate_sites import flip_sites

SOURCE = "def f(a, b):\n" + "".join(f"    if a < {i} and b > {i}:\n        return {i}\n" for i in range(12)) \
    + "    return -1\n"


def test_sites_found_once_per_function_not_per_mutant():
    calls = []

    def counting(fn):
        calls.append(fn)
        return flip_sites(fn)

    family = mutate._family("flip_comparison", counting, move_flip, lambda s, site: "flip")
    found = family(SOURCE, "f")
    assert len(found) == 24  # one per comparison: every site still mutated
    assert len(calls) == 1, f"the sites were found {len(calls)} times for {len(found)} mutants"


def test_mutants_unchanged_and_each_only_its_site():
    original = ast.parse(SOURCE)
    for m in mutate.mutants(SOURCE, "f", ["flip_comparison"]):
        changed = [b for a, b in zip(SOURCE.splitlines(), m.source.splitlines()) if a != b]
        assert len(changed) == 1 and ("<=" in changed[0] or ">=" in changed[0]), m.description
    assert ast.dump(ast.parse(SOURCE)) == ast.dump(original)  # the shared tree is never changed


def test_copy_node_is_a_deep_copy_with_a_map_of_every_node():
    tree = ast.parse(SOURCE)
    fn = tree.body[0]
    memo: dict[int, ast.AST] = {}
    new = copy_node(fn, memo)
    assert ast.dump(new, include_attributes=True) == ast.dump(copy.deepcopy(fn), include_attributes=True)
    for node in ast.walk(fn):
        assert memo[id(node)] is not node and type(memo[id(node)]) is type(node)
    new.body[0].test.values[0].ops[0] = ast.Gt()  # a change to the copy leaves the original alone
    assert isinstance(fn.body[0].test.values[0].ops[0], ast.Lt)


@pytest.mark.parametrize("a, b", [
    ("x = 1", "x = 1"), ("x = 1", "x = True"), ("x = 1", "x = 1.0"), ("x = 0.0", "x = -0.0"),
    ("f(a, b)", "f(b, a)"), ("f(a)", "f(a, *c)"), ("u'x'", "'x'"), ("a < b", "a <= b"),
    ("def g(x=1): pass", "def g(x=1):\n    pass"), ("(a)", "a"), ("b'x'", "'x'"),
])
def test_same_node_agrees_with_dump(a, b):
    ta, tb = ast.parse(a), ast.parse(b)
    if a == "x = 0.0":  # `-0.0` parses as a negation: make the constants themselves differ
        tb.body[0].value = ast.Constant(-0.0)
    assert same_node(ta, tb) == (ast.dump(ta) == ast.dump(tb))

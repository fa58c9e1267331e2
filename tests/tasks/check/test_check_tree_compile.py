"""Code compiled from a syntax tree while changed code is on the stack. werkzeug builds each
URL rule's builder as a tree and compiles it (`compile(module, "<werkzeug routing>", "exec")`);
flask's `add_url_rule` runs that from a changed flask module. The audit event of a tree's
compile names no file, so the guard could not follow the code it made and stopped the run
("loads code objects (marshal) from changed code"): two flask tasks whose reference fix passes
every test were dropped, and an honest fix of those files earned 0. builtins.compile is now a
wrapper that reports the code object it made; the guard records that object by identity as
changed code's, so it runs as changed code wherever it runs later -- shown here by a trusted
helper that runs it with no changed code on the stack, and by a tree whose node, read by the
compiler, compiles something else in the middle (its report must not stand in for the outer
one)."""
from __future__ import annotations

import textwrap

import pytest
from suitekit import fix_task, write_repo

from fixrl.tasks import Task, run_check
from fixrl.tasks.check.guard import spec_for

# an unchanged helper of the repository, like werkzeug's rule builder; and one that runs code
# objects it was handed later, from a test, with no changed code on the stack
BUILDER = textwrap.dedent("""\
    import ast

    PENDING = []


    def make_adder(n):
        tree = ast.parse("def adder(x):\\n    return x + N\\n")
        tree.body[0].body[0].value.right = ast.Constant(n)
        ast.fix_missing_locations(tree)
        namespace = {}
        exec(compile(tree, "<builder>", "exec"), namespace)
        return namespace["adder"]


    def run_pending():
        for code in PENDING:
            exec(code, {})
""")

CALC = "from builder import make_adder\n\n\ndef add(a, b):\n    return make_adder(b)(a){bug}\n"
BUGGY = CALC.format(bug=" - 1")
FIXED = CALC.format(bug="")

# what changed code hands to the helper: a tree whose code reads a hidden test file
STEAL = "import ast\nimport builder\n\n_TREE = ast.parse(\"open('tests/test_hidden.py').read()\")\n"
ATTACKS = {
    "later": STEAL + "builder.PENDING.append(compile(_TREE, '<later>', 'exec'))\n",
    "nested": STEAL + textwrap.dedent("""\


        _READ = _TREE.body[0].value


        class Sneaky(ast.Expr):
            @property
            def value(self):
                compile(ast.parse("1"), "<inner>", "exec")  # its own report, in the middle
                return _READ


        _TREE.body[0] = Sneaky(lineno=1, col_offset=0, end_lineno=1, end_col_offset=1)
        builder.PENDING.append(compile(_TREE, '<nested>', 'exec'))
    """),
}

HIDDEN = textwrap.dedent("""\
    import builder
    from calc import add


    def test_add():
        builder.run_pending()
        assert add(1, 2) == 3


    def test_add_again():
        assert add(2, 2) == 4
""")
TESTS = ["tests/test_hidden.py::test_add", "tests/test_hidden.py::test_add_again"]


def judge(pool, tmp_path, calc: str):
    ws = write_repo(tmp_path / "ws", {"calc.py": calc, "builder.py": BUILDER})
    check = {"files": {"tests/test_hidden.py": HIDDEN}, "tests": TESTS, "timeout": 30}
    task = Task.model_validate(fix_task("t", repo=str(ws), check=check))
    with pool.acquire(ws) as sb:
        return run_check(task, sb, guard=spec_for({"calc.py": (BUGGY, None)}))


def test_a_fix_whose_helper_compiles_a_tree_passes(pool, tmp_path):
    r = judge(pool, tmp_path, FIXED)
    assert r.outcome == "pass", (r.reason, r.tests, r.output[-1500:])


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_code_compiled_from_a_tree_by_changed_code_stays_changed_code(pool, tmp_path, attack):
    r = judge(pool, tmp_path, FIXED + ATTACKS[attack])
    assert r.outcome == "fail"
    assert "test file" in r.reason, (r.reason, r.output[-1500:])

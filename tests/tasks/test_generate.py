"""The generator on a tiny throwaway repository made here: real sandboxes (local backend) run
the repository's real tests on every mutant; the emitted suite loads and validates."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from fixrl.tasks.generate import GenerateError, generate, round_robin, split_by_function, unified_diff

OPS = '''\
"""Tiny arithmetic helpers."""


def add_all(xs):
    total = 0
    for x in xs:
        total += x
    return total


def clamp(v, lo, hi):
    # keep v inside [lo, hi]
    return max(lo, min(v, hi))


def is_even(n):
    return n % 2 == 0


def first_index(xs, target):
    for i in range(len(xs)):
        if xs[i] == target:
            return i
    return -1


def count_positive(xs):
    count = 0
    for x in xs:
        if not x <= 0:
            count += 1
    return count
'''

TESTS = '''\
import pytest

from calc.ops import add_all, clamp, count_positive, first_index, is_even


def test_add_all():
    assert add_all([1, 2, 3]) == 6


def test_add_all_empty():
    assert add_all([]) == 0


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_low():
    assert clamp(-2, 0, 10) == 0


def test_clamp_high():
    assert clamp(11, 0, 10) == 10


def test_is_even():
    assert is_even(4) is True
    assert is_even(7) is False


def test_first_index():
    assert first_index([4, 5, 6], 6) == 2


def test_first_index_missing():
    assert first_index([4, 5], 9) == -1


def test_count_positive():
    assert count_positive([-1, 0, 2, 3]) == 2


def test_first_index_type():
    with pytest.raises(TypeError):
        first_index(None, 1)
'''


def make_repo(root: Path, tests: str = TESTS) -> Path:
    repo = root / "tiny"
    (repo / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "calc" / "__init__.py").write_text("")
    (repo / "calc" / "ops.py").write_text(OPS)
    (repo / "tests" / "test_ops.py").write_text(tests)
    (repo / "conftest.py").write_text("")
    (repo / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    return repo


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("gen")
    repo = make_repo(root)
    out = root / "suite"
    report = generate(repo, "python -m pytest -q", out, max_tasks=6, seed=3, backend="local",
                      heldout_frac=0.4, workers=2, progress=False)
    return repo, out, report


def test_yield_report(generated):
    _, out, report = generated
    assert report.tests == 10
    assert report.candidates >= 20
    assert report.tested <= report.candidates
    assert report.broke >= report.kept >= report.valid >= 4
    assert report.per_op["flip_comparison"].candidates > 0
    for st in report.per_op.values():  # every tested mutant lands in exactly one bucket
        assert st.tested == st.kept + st.equivalent + st.not_local + st.timeout + st.error
        assert st.broke == st.kept + st.not_local
        assert st.selected == st.valid + st.invalid
    assert (out / "generate_report.json").is_file()
    assert report.train + report.heldout == report.valid


def test_tasks_load_and_are_well_formed(generated):
    from fixrl.tasks import load_suite

    repo, out, report = generated
    suite = load_suite(out)
    assert sorted(t.id for t in suite.tasks) == report.task_ids
    assert set(suite.rename_pool) == {"add_all", "clamp", "is_even", "first_index", "count_positive"}
    clean = (repo / "calc" / "ops.py").read_text()
    for t in suite.tasks:
        assert t.kind == "fix" and t.file == "calc/ops.py" and t.function in suite.rename_pool
        assert f"family:{t.family}" in t.tags and f"function:{t.function}" in t.tags
        assert t.limits.max_edits == 1 and t.limits.max_turns == 8
        assert t.check.tests and all(n.startswith("tests/test_ops.py::") for n in t.check.tests)
        assert set(t.metadata["generator"]["FAIL_TO_PASS"]) <= set(t.check.tests)
        assert "tests/test_ops.py" in t.check.files
        # bug and fix are each other's reverse, one small hunk
        assert t.bug.startswith("--- a/calc/ops.py\n+++ b/calc/ops.py\n")
        removed = [x[1:] for x in t.bug.splitlines() if x.startswith("-") and not x.startswith("---")]
        added = [x[1:] for x in t.bug.splitlines() if x.startswith("+") and not x.startswith("+++")]
        assert 1 <= len(removed) + len(added) <= 3
        assert all(line in clean for line in removed)
        # the issue never shows the mutated line nor the original one
        for line in removed + added:
            assert line.strip() not in t.issue, (t.id, line, t.issue)
        assert "Calling `" in t.issue or "does not raise" in t.issue


def test_split_by_function(generated):
    from fixrl.tasks import load_suite

    _, out, _ = generated
    suite = load_suite(out)
    train = {t.function for t in suite.split("train")}
    held = {t.function for t in suite.split("heldout")}
    assert train and held
    assert not train & held


def test_every_task_validates_again(generated):
    """Independently of the generator's own validation: buggy fails, fixed passes."""
    from fixrl.sandbox import SandboxPool
    from fixrl.tasks import load_suite, materialize, run_check

    _, out, _ = generated
    suite = load_suite(out)
    with SandboxPool(1, backend="local") as pool:
        for t in suite.tasks[:3]:
            for state, want in (("buggy", "fail"), ("fixed", "pass")):
                ws = materialize(t, out / ".." / f"ws-{t.id}-{state}", state)
                with pool.acquire(ws) as sb:
                    assert run_check(t, sb).outcome == want, (t.id, state)


def test_regenerating_keeps_hand_written_tasks(generated, tmp_path):
    repo, _, _ = generated
    out = tmp_path / "suite"
    hand = out / "tasks" / "hand.yaml"
    hand.parent.mkdir(parents=True)
    hand.write_text("# a hand-written task lives here\n")
    generate(repo, "python -m pytest -q", out, max_tasks=2, seed=1, workers=2, validate=False, progress=False,
             ops=["flip_comparison", "swap_minmax"])
    assert hand.read_text() == "# a hand-written task lives here\n"
    assert len(list((out / "tasks" / "generated").glob("*.yaml"))) == 2


def test_failing_repository_is_refused(tmp_path):
    repo = make_repo(tmp_path, TESTS + "\n\ndef test_broken():\n    assert add_all([1]) == 2\n")
    with pytest.raises(GenerateError, match="repository without passing tests.*test_broken"):
        generate(repo, "python -m pytest -q", tmp_path / "out", max_tasks=2, workers=1, progress=False)


def test_repository_without_tests_is_refused(tmp_path):
    repo = make_repo(tmp_path, "def helper():\n    pass\n")
    with pytest.raises(GenerateError, match="repository without passing tests"):
        generate(repo, "python -m pytest -q", tmp_path / "out", max_tasks=2, workers=1, progress=False)


def test_non_pytest_command_is_refused(tmp_path):
    repo = make_repo(tmp_path)
    with pytest.raises(GenerateError, match="not a plain pytest command"):
        generate(repo, "make test && echo ok", tmp_path / "out", workers=1, progress=False)
    with pytest.raises(GenerateError, match="not a directory"):
        generate(tmp_path / "missing", "pytest", tmp_path / "out", workers=1, progress=False)
    with pytest.raises(GenerateError, match="inside --repo"):
        generate(repo, "pytest", repo / "suite", workers=1, progress=False)


# ---------------------------------------------------------------- pure parts

def test_split_is_by_function_and_near_fraction():
    fns = [f"f{i}" for i in range(12)]
    held = split_by_function(fns, {f: 2 for f in fns}, 1 / 3, random.Random(0))
    assert len(held) == 4
    assert split_by_function(["a"], {"a": 3}, 0.5, random.Random(0)) == set()


def test_unified_diff_applies_with_git(tmp_path):
    import subprocess

    (tmp_path / "a.py").write_text("x = 1\ny = 2")  # no final newline
    patch = unified_diff("a.py", "x = 1\ny = 2", "x = 1\ny = 3")
    (tmp_path / "p.patch").write_text(patch)
    subprocess.run(["git", "apply", "p.patch"], cwd=tmp_path, check=True)
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 3"


def test_classify():
    from fixrl.tasks.generate import Candidate, TestRun, _classify
    from fixrl.tasks.mutate import Mutant

    stable = ["t::a", "t::b", "t::c", "t::d"]

    def run(**outcomes):
        return TestRun({n: outcomes.get(n.split("::")[1], "passed") for n in stable}, {}, 0, 0.1)

    def status(r):
        c = Candidate("m.py", "f", "f", Mutant("flip_comparison", "x", 1, ""))
        _classify(c, r, stable, 0.5)
        return c.status, c.broken

    assert status(run()) == ("equivalent", [])
    assert status(run(a="failed")) == ("kept", ["t::a"])
    assert status(run(a="failed", b="error")) == ("kept", ["t::a", "t::b"])
    assert status(run(a="failed", b="failed", c="failed"))[0] == "not_local"
    assert status(None)[0] == "error"
    assert status(TestRun({}, {}, -1, 9.0, timed_out=True))[0] == "timeout"
    assert status(TestRun({}, {}, 2, 0.1, collect_errors=["tests/test_x.py"]))[0] == "error"


def test_round_robin_spreads_families():
    from fixrl.tasks.generate import Candidate
    from fixrl.tasks.mutate import Mutant

    cands = [Candidate("a.py", f"f{i % 3}", f"f{i % 3}", Mutant(op, f"src{op}{i}", 1, ""))
             for op in ("x", "y") for i in range(6)]
    order = round_robin(cands, random.Random(0))
    assert {c.mutant.op for c in order[:2]} == {"x", "y"}
    assert len({(c.mutant.op, c.qualname) for c in order[:6]}) == 6


@pytest.mark.docker
def test_generate_in_docker(tmp_path, docker_available):
    """The same generator in Docker sandboxes (the image's own python3 and pytest 7.2)."""
    from fixrl.tasks import load_suite

    repo = make_repo(tmp_path)
    out = tmp_path / "suite"
    report = generate(repo, "python -m pytest -q", out, max_tasks=2, seed=0, backend="docker", workers=2,
                      repeats=1, progress=False, ops=["flip_comparison", "wrong_arith"])
    assert report.tests == 10
    assert report.valid == 2, report.invalid_reasons
    assert all("Calling `" in t.issue for t in load_suite(out).tasks)

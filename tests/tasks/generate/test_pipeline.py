"""The generator on a tiny throwaway repository made here: real sandboxes (local backend) run
the repository's real tests on every mutant; the emitted suite loads and validates."""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import yaml

from fixrl.tasks.generate.config import GenerateError
from fixrl.tasks.generate.order import round_robin, split_by_function
from fixrl.tasks.generate.pipeline import generate
from fixrl.tasks.generate.write import unified_diff

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
    assert yaml.safe_load((out / "suite.yaml").read_text())["defaults"]["limits"]["tool_timeout"] == 60.0
    for t in suite.tasks:
        assert t.kind == "fix" and t.file == "calc/ops.py" and t.function in suite.rename_pool
        assert f"family:{t.family}" in t.tags and f"function:{t.function}" in t.tags
        assert t.limits.max_edits == 1 and t.limits.max_turns == 8
        assert t.limits.tool_timeout == 60.0  # written by the generator (a suite of seconds: the floor)
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
    with pytest.raises(GenerateError, match="repository without passing tests.*test_broken.*--max-baseline-failures"):
        generate(repo, "python -m pytest -q", tmp_path / "out", max_tasks=2, workers=1, progress=False,
                 max_baseline_failures=0.0)


def test_a_baseline_that_hangs_names_the_test_it_was_running(tmp_path):
    """werkzeug 3.1.9: a dev-server test polls a live server that never answers, and the
    baseline said only "did not finish in 600 s", leaving the user to bisect a suite of a
    thousand tests. The message now names the test that was running and how to leave it out."""
    repo = make_repo(tmp_path, TESTS + "\n\ndef test_waits_for_a_server():\n    import time\n    time.sleep(600)\n")
    with pytest.raises(GenerateError) as err:
        generate(repo, "python -m pytest -q", tmp_path / "out", max_tasks=2, workers=1, progress=False,
                 baseline_timeout=8.0)
    msg = str(err.value)
    assert "did not finish in 8 s in the baseline run; a suite that is only slow: raise --baseline-timeout" in msg, msg
    assert "the test it was running when it was stopped: tests/test_ops.py::test_waits_for_a_server" in msg, msg
    assert "--deselect tests/test_ops.py::test_waits_for_a_server" in msg, msg


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
    from fixrl.tasks.generate.baseline import TestRun
    from fixrl.tasks.generate.candidate import Candidate
    from fixrl.tasks.generate.mutate import Mutant
    from fixrl.tasks.generate.search import _classify

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
    from fixrl.tasks.generate.candidate import Candidate
    from fixrl.tasks.generate.mutate import Mutant

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
    # the coverage plugin works with the image's pytest: candidates ran their covering tests only
    assert report.selection and report.functions_covered >= 3 and 0 < report.mean_selected_tests < 10


# ---------------------------------------------------------------- test selection, spread, progress, resume

@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """The shop repository generated with a recording runner: every job it ran, and its result."""
    from genkit import RecordingRunner, make_shop_repo

    from fixrl.tasks.generate.execute import LocalRunner

    root = tmp_path_factory.mktemp("shop")
    repo = make_shop_repo(root)
    out = root / "suite"
    runner = RecordingRunner(LocalRunner(2))
    try:
        report = generate(repo, "python -m pytest -q", out, seed=1, validate=False, runner=runner,
                          max_per_function=1, progress=True, progress_every=0.2)
    finally:
        runner.close()
    return repo, out, report, runner.runs


def test_a_candidate_runs_only_the_tests_that_cover_its_function(shop):
    from genkit import COVERING, mutated_function

    _, _, report, runs = shop
    selected = [(job, res) for job, res in runs if job.source is not None and job.select is not None]
    assert selected and report.selection
    for job, res in selected:
        fn = mutated_function(job.source)
        assert set(job.select) == COVERING[fn], (fn, job.select)
        assert set(res.report["tests"]) == set(job.select)  # pytest ran those and nothing else
    assert {mutated_function(j.source) for j, _ in selected} == set(COVERING)
    assert report.opaque_tests == 1 and report.functions_covered == 4 and report.functions_uncovered == 0


def test_a_kept_bugs_check_lists_every_test_it_breaks(shop):
    """`test_total_memo` never calls `total` (not in its selection) but a bug in `total` breaks
    it: the whole-suite run after the selected one puts it in the check."""
    from fixrl.tasks import load_suite

    _, out, report, runs = shop
    tasks = [t for t in load_suite(out).tasks if t.function == "total"]
    assert tasks, report.task_ids
    for t in tasks:
        f2p = t.metadata["generator"]["FAIL_TO_PASS"]
        assert "tests/test_shop.py::test_total_memo" in f2p and "tests/test_shop.py::test_total" in f2p
        assert set(f2p) <= set(t.check.tests)
    whole = [job for job, _ in runs if job.source is not None and job.select is None]
    assert len(whole) >= report.kept  # every kept bug ran the whole suite


def test_no_function_holds_more_than_its_cap(shop, generated):
    from collections import Counter

    from fixrl.tasks import load_suite

    _, out, report, _ = shop
    assert max(Counter(t.function for t in load_suite(out).tasks).values()) == 1
    assert report.capped > 0 and report.max_per_function == 1
    _, out, _ = generated  # the default cap: 2
    assert max(Counter(t.function for t in load_suite(out).tasks).values()) <= 2


def test_progress_lines_and_the_log_file(shop, capsys):
    _, out, report, _ = shop
    log = (out / "generate.log").read_text()
    assert "candidates" in log and " kept" in log and "/min" in log and "baseline:" in log
    assert f"done: {report.valid} valid tasks" in log
    assert not (out / ".generate-stage").exists() and (out / "generate.journal.jsonl").is_file()


def test_targeting_flags(tmp_path):
    from genkit import make_shop_repo

    from fixrl.tasks.generate.config import GenerateConfig
    from fixrl.tasks.generate.scan import scan

    repo = make_shop_repo(tmp_path)
    (repo / "shop" / "_helpers.py").write_text("def _inner(x):\n    return x + 1\n\n\ndef outer(x):\n    return x - 1\n")

    def functions(**kw):
        return {(c.file, c.qualname, c.mutant.op) for c in scan(repo, GenerateConfig(**kw)).candidates}

    every = functions()
    assert {f for f, _, _ in every} == {"shop/prices.py", "shop/_helpers.py"}
    assert {q for f, q, _ in functions(files=["shop/_*.py"])} == {"_inner", "outer"}
    assert {q for _, q, _ in functions(exclude_private=True)} == {"total", "discount", "clamp", "unused", "outer"}
    assert {q for _, q, _ in functions(functions=["dis*", "clamp"])} == {"discount", "clamp"}
    assert {op for _, _, op in functions(ops=["flip_comparison"])} == {"flip_comparison"}
    with pytest.raises(GenerateError, match="--files 'nope/\\*' matches none"):
        functions(files=["nope/*"])
    with pytest.raises(GenerateError, match="--functions missing"):
        functions(functions=["missing"])


def test_a_failed_generation_leaves_nothing_behind(tmp_path):
    repo = make_repo(tmp_path, TESTS + "\n\ndef test_broken():\n    assert add_all([1]) == 2\n")
    out = tmp_path / "new-suite"
    with pytest.raises(GenerateError, match="test_broken"):
        generate(repo, "python -m pytest -q", out, max_tasks=2, workers=1, progress=False, max_baseline_failures=0.0)
    assert not out.exists()
    with pytest.raises(GenerateError, match="matches none"):
        generate(repo, "python -m pytest -q", out, workers=1, progress=False, files=["nope.py"])
    assert not out.exists()


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_suite_of_an_uninterrupted_one(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    repo = make_repo(tmp_path)
    opts = {"max_tasks": 4, "seed": 5, "validate": False, "progress": False}
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    code = (f"from fixrl.tasks.generate.pipeline import generate\n"
            f"generate({str(repo)!r}, 'python -m pytest -q', {str(killed)!r}, workers=1, **{opts!r})\n")
    (tmp_path / "tmp").mkdir()
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True,
                            env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    journal = killed / "generate.journal.jsonl"

    def candidates_journaled() -> int:
        text = journal.read_text() if journal.exists() else ""
        return sum('"id": "calc/' in line for line in text.splitlines())

    deadline = time.monotonic() + 300
    while candidates_journaled() < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = candidates_journaled()
    assert done_before >= 3 and not (killed / "tasks").exists()  # nothing of the suite was written

    resumed = generate(repo, "python -m pytest -q", killed, workers=2, **opts)
    fresh = generate(repo, "python -m pytest -q", whole, workers=2, **opts)
    assert resumed.reused >= done_before
    assert fresh.reused == 0
    assert resumed.task_ids == fresh.task_ids and resumed.kept == fresh.kept
    assert {op: vars(s) for op, s in resumed.per_op.items()} == {op: vars(s) for op, s in fresh.per_op.items()}

    def files(root):
        return {str(p.relative_to(root)): p.read_bytes() for sub in ("tasks", "checks")
                for p in sorted((root / sub).rglob("*")) if p.is_file()}

    assert files(killed) == files(whole) and files(whole)


def test_coverage_map():
    from fixrl.tasks.generate.coverage import CoverageMap, function_spans

    record = {"files": ["pkg/m.py", "pkg/n.py"],
              "tests": {"t::a": [[0, 3], [0, 12]], "t::b": [[0, 12]], "t::c": [[1, 1]], "t::p": [[1, 1]]},
              "global": [[0, 20]], "spawned": ["t::p"], "lost": [], "durations": {"t::a": 0.5}}
    m = CoverageMap.from_record(record)
    assert m.covering("pkg/m.py", (1, 5)) == {"t::a", "t::p"}       # the process-starting test always
    assert m.covering("pkg/m.py", (10, 14)) == {"t::a", "t::b", "t::p"}
    assert m.covering("pkg/m.py", (18, 25)) is None                  # runs at import only: the whole suite
    assert m.covering("pkg/m.py", (1, 20)) == {"t::a", "t::b", "t::p"}  # at import and in tests: those tests
    assert m.covering("pkg/m.py", (30, 40)) == {"t::p"}              # no test calls it
    assert CoverageMap.from_record({**record, "global_spawn": True}).covering("pkg/m.py", (1, 5)) is None
    src = "import functools\n\n\n@functools.cache\ndef f(x):\n    return x\n\n\nclass C:\n    def m(self):\n        pass\n"
    assert function_spans(src) == {"f": (4, 6), "C.m": (10, 11)}


def test_journal_drops_a_torn_line_and_restarts_on_other_inputs(tmp_path):
    from fixrl.tasks.generate.journal import Journal

    path = tmp_path / "j.jsonl"
    j = Journal(path, {"repo": "abc"})
    j.put("x/sel", {"broken": ["t::a"]})
    j.close()
    with open(path, "a") as f:
        f.write('{"kind": "record", "id": "y/se')  # killed mid-line
    j = Journal(path, {"repo": "abc"})
    assert j.reused == 1 and j.get("x/sel")["broken"] == ["t::a"] and j.get("y/sel") is None
    j.put("y/sel", {"broken": []})
    j.close()
    assert Journal(path, {"repo": "abc"}).get("y/sel") == {"broken": [], "kind": "record", "id": "y/sel"}
    other = Journal(path, {"repo": "changed"})
    assert other.reused == 0 and other.restarted and other.get("x/sel") is None


def test_eta():
    from fixrl.tasks.generate.progress import Counts, eta_seconds, status_line

    assert eta_seconds(Counts(total=100, done=10, tested=10, kept=5, target=15), 1.0) == 20.0
    assert eta_seconds(Counts(total=100, done=10, tested=10, kept=0, target=15), 1.0) is None
    assert eta_seconds(Counts(total=100, done=40), 2.0) == 30.0
    assert eta_seconds(Counts(total=100, done=40, tested=40, kept=15, target=15), 2.0) == 0.0
    line = status_line(Counts(total=100, done=10, tested=8, kept=5, skipped=2, target=15), 12.0, 150)
    assert line == "candidates 10/100 decided: 8 tested, 5 kept (of 15 wanted), 2 skipped; 12.0/min, about 2 min left"


def test_the_check_keeps_the_test_commands_pytest_options():
    """cachetools' tests import it from src/ through `-o pythonpath=src`: a check without the
    option collects nothing, and every reference fix fails with its tests missing."""
    from fixrl.tasks.generate.commands import check_command

    ids = ["tests/test_a.py::test_x"]
    assert check_command("python -m pytest -q -o pythonpath=src tests", ids) == \
        "python -m pytest -q -o pythonpath=src tests/test_a.py::test_x"
    assert check_command("PYTHONHASHSEED=0 python -X dev -m pytest tests/ -p no:randomly --import-mode=importlib "
                         "-x --lf -k 'not slow'", ids) == \
        "PYTHONHASHSEED=0 python -X dev -m pytest -q -p no:randomly --import-mode=importlib -k 'not slow' " \
        "tests/test_a.py::test_x"
    assert check_command("pytest -q toolz/tests", ids) == "python -m pytest -q tests/test_a.py::test_x"


def test_the_test_tool_gets_the_time_a_whole_suite_run_gets(tmp_path):
    """more-itertools' test_more.py takes ~40 s idle, over 60 s on a busy machine: the agent's
    `test` tool (the whole suite, guarded, as the validation runs it) gets the check's factor
    over the guarded run's cost, up to 3x the baseline (wcwidth: 17 s at the baseline, over 60 s
    through the check's runner; werkzeug's 60 s timed out under load)."""
    from collections import Counter

    from fixrl.tasks.generate.config import GenerateConfig
    from fixrl.tasks.generate.staging import suite_config

    limits = lambda s: suite_config(tmp_path, tmp_path, Counter(), "pytest", GenerateConfig(), s)[  # noqa: E731
        "defaults"]["limits"]["tool_timeout"]
    assert (limits(1.0), limits(3.0), limits(17.0), limits(1000.0)) == (60.0, 95.0, 515.0, 600.0)


def test_the_log_says_why_candidate_testing_stopped(generated):
    """`--max 6` tests until 14 bugs are kept (spares for those dropped later): the log says so,
    and says whether the target was reached or the candidates ran out, and where they went."""
    _, out, report = generated
    log = (out / "generate.log").read_text()
    assert "testing candidates until 14 bugs are kept: --max 6 plus spares" in log
    assert re.search(r"candidate testing (stopped: \d+ bugs kept, the 14 wanted|ended: every one of the \d+ "
                     r"candidates was decided, \d+ bugs kept of the 14 wanted)", log), log[-1500:]


# A comparison dunder that is a descriptor object, no function (werkzeug's LocalProxy binds its
# comparisons so): the guard cannot see its code and stops the run, though the test is unchanged.
DESCRIPTOR_TEST = '''


import operator


class _Delegate:
    def __init__(self, op):
        self.op = op

    def __get__(self, obj, owner=None):
        return lambda other: self.op(obj.value, other)


class Boxed:
    __eq__ = _Delegate(operator.eq)
    __hash__ = None

    def __init__(self, value):
        self.value = value


def test_boxed_compares():
    assert Boxed(3) == 3


def test_add_all_again():
    assert add_all([2, 2]) == 4


def test_again_boxed():
    assert Boxed(4) == 4
'''


def test_tests_only_the_guard_stops_leave_the_public_command(tmp_path):
    """The baseline passes every test; the `test` tool's guarded run of the same command stopped
    at `test_boxed_compares` (and, without it, at `test_again_boxed`), every time,
    whatever the fix: the generator excludes both from the public command, says why in the
    report, and the suite's tasks validate."""
    from fixrl.tasks import load_suite, validate_suite

    repo = make_repo(tmp_path, TESTS + DESCRIPTOR_TEST)
    out = tmp_path / "suite"
    report = generate(repo, "python -m pytest -q", out, max_tasks=2, seed=3, backend="local", workers=1,
                      progress=False)
    # two stops, one file: the second is found by running the file alone without the first
    culprits = ["tests/test_ops.py::test_again_boxed", "tests/test_ops.py::test_boxed_compares"]
    guarded = report.guard_excluded_tests["tests"]
    assert list(guarded) == culprits, guarded
    assert all(why.startswith("the check's guard stopped the run in it: ") and "Boxed.__eq__" in why
               for why in guarded.values()), guarded
    assert report.excluded_tests["count"] == 0
    defaults = yaml.safe_load((out / "suite.yaml").read_text())["defaults"]
    assert defaults["public_tests"] == "python -m pytest -q " + " ".join(f"--deselect {c}" for c in culprits)
    # the test tool's limit: at least 10x the guarded run parity timed (the floor, here)
    assert report.guarded_public_seconds > 0
    assert defaults["limits"]["tool_timeout"] == max(60.0, round(5 + 10 * report.guarded_public_seconds))
    assert report.valid >= 1
    assert all(r.ok for r in validate_suite(load_suite(out), backend="local", repeats=1))


def test_guard_only_names_failures_and_the_test_a_stop_ended():
    from fixrl.tasks.check.reward import GUARD_STOPPED
    from fixrl.tasks.generate.parity import guard_only

    stable = {"a", "b", "c", "d"}
    tests = {"a": "tampered", "b": "failed", "c": "missing", "d": "missing", "e": "failed"}
    stopped = GUARD_STOPPED + "fixrl.compare: why"
    assert guard_only(tests, stopped, stable, "c") == {
        "b": "fails only under the check's guard", "c": "the check's guard stopped the run in it: fixrl.compare: why"}
    assert guard_only(tests, "", stable, "c") == {"b": "fails only under the check's guard"}  # not stopped
    assert guard_only(tests, stopped, stable, None) == {"b": "fails only under the check's guard"}  # no test ran
    assert guard_only({"a": "passed", "e": "failed"}, "", stable) == {}  # e: failing at the baseline too

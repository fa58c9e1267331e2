"""A check's verdict does not depend on the sandbox having judged other tasks before: one sandbox
of each kind, reused over a mixed sequence of buggy and fixed states of tasks from four package
layouts (tests/layouts.py), gives exactly the verdict of a fresh sandbox, test by test."""
from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest
from layouts import LAYOUTS, write_layout_suite

from fixrl import tasks
from fixrl.sandbox import SandboxPool, open_sandbox
from fixrl.sandbox.forking import ForkingSandbox
from fixrl.tasks.check.judge import judge_tree
from fixrl.tasks.check.validate import validate_suite


@pytest.fixture(scope="module")
def layout_suites(tmp_path_factory) -> list[tasks.Suite]:
    root = tmp_path_factory.mktemp("layouts")
    return [tasks.load_suite(write_layout_suite(root / name, name)) for name in LAYOUTS]


def mixed_states(suites: list[tasks.Suite]) -> list[tuple[tasks.Task, str]]:
    """Every task's buggy and fixed state, consecutive states always from different layouts."""
    per_layout = [[(t, s) for t in suite.tasks for s in ("fixed", "buggy")] for suite in suites]
    return [x for group in itertools.zip_longest(*per_layout) for x in group if x is not None]


def state_tree(task: tasks.Task, state: str, root: Path) -> Path:
    dest = root / f"{task.id}-{state}"
    if dest.exists():
        shutil.rmtree(dest)
    return tasks.materialize(task, dest, state, cache=True)


def verdict(res) -> tuple[str, dict[str, str]]:
    return res.outcome, dict(res.tests)


@pytest.fixture(scope="module")
def fresh_verdicts(layout_suites, tmp_path_factory):
    """(task id, state) -> the verdict of a new plain local sandbox (a fresh interpreter per check)."""
    root = tmp_path_factory.mktemp("fresh")
    out = {}
    for task, state in mixed_states(layout_suites):
        out[task.id, state] = verdict(judge_tree(task, state_tree(task, state, root),
                                                 lambda tree: open_sandbox(tree, backend="local")))
    return out


def test_fresh_verdicts_are_the_expected_ones(layout_suites, fresh_verdicts):
    """The reference itself: fixed states pass every named test, buggy states fail with every
    named test reported (failed or passed, never missing)."""
    for task, state in mixed_states(layout_suites):
        outcome, tests = fresh_verdicts[task.id, state]
        assert set(tests) == set(task.check.tests), (task.id, state, tests)
        if state == "fixed":
            assert outcome == "pass" and set(tests.values()) == {"passed"}, (task.id, tests)
        else:
            assert outcome == "fail" and "failed" in tests.values(), (task.id, tests)
            assert "missing" not in tests.values(), (task.id, tests)


def _reused_run(layout_suites, fresh_verdicts, root: Path, open_check) -> None:
    for i, (task, state) in enumerate(mixed_states(layout_suites)):
        got = verdict(judge_tree(task, state_tree(task, state, root), open_check))
        assert got == fresh_verdicts[task.id, state], f"step {i}: {task.id} {state}"


def test_reused_forking_check_sandbox_agrees_with_a_fresh_one(layout_suites, fresh_verdicts, tmp_path):
    """The local pool's check sandbox (a ForkingSandbox, pytest kept imported), size 1, so every
    check after the first reuses it."""
    with SandboxPool(1) as pool:
        _reused_run(layout_suites, fresh_verdicts, tmp_path, pool.check_sandbox)
        with pool.check_sandbox(tmp_path) as sb:
            assert isinstance(sb._sb, ForkingSandbox) and sb.forking
            assert sb.forks == len(fresh_verdicts)  # every check forked, none fell back
        assert pool._checks.created == 1


def test_reused_local_sandbox_agrees_with_a_fresh_one(layout_suites, fresh_verdicts, tmp_path):
    with SandboxPool(1) as pool:
        _reused_run(layout_suites, fresh_verdicts, tmp_path, pool.acquire)
        assert pool.created == 1


@pytest.mark.slow
def test_reused_docker_sandbox_agrees_with_a_fresh_one(layout_suites, fresh_verdicts, tmp_path, docker_available):
    """A container reused across tasks (the Docker pool's agent sandboxes), and the Docker
    pool's own check sandboxes (a new container per check)."""
    with SandboxPool(1, backend="docker") as pool:
        _reused_run(layout_suites, fresh_verdicts, tmp_path, pool.acquire)
        assert pool.created == 1
        _reused_run(layout_suites[:2], fresh_verdicts, tmp_path, pool.check_sandbox)


def test_validate_judges_in_the_rollouts_check_sandboxes(layout_suites, monkeypatch):
    """`fixrl tasks validate` runs every check through the forking check sandbox rollouts use."""
    forks = []
    real = ForkingSandbox.fork_python

    def counting(self, *args, **kwargs):
        forks.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ForkingSandbox, "fork_python", counting)
    suite = layout_suites[1]
    results = validate_suite(suite, jobs=1, repeats=2)
    assert [r.ok for r in results] == [True] * len(suite.tasks), [r.reasons for r in results]
    assert len(forks) == 2 * 2 * len(suite.tasks)  # 2 states x 2 repeats per task
    assert len({id(sb) for sb in forks}) == 1

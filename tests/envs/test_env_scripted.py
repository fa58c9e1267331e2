"""Scripted plans drive real episodes: the oracle passes everything, the blind policy passes
exactly where its family's repair is the fix, the random policy rarely."""
from __future__ import annotations

import ast
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from fixrl.envs import EnvConfig, episode_env
from fixrl.envs.reference import next_edit, shrink_edit
from fixrl.envs.scripted import BlindPlan, make_plan, oracle_plan, run_plan
from fixrl.tasks.format.reference import reference


def _episode(suite, task, kind, seed=0, family=None, backend="local", **config):
    with episode_env(task, EnvConfig(**config), suite, backend=backend, seed=seed) as env:
        plan = make_plan(kind, task, env, random.Random(seed))
        if family is not None:
            assert isinstance(plan, BlindPlan)
            plan.family = family
        reward, info = run_plan(env, plan)
        return reward, info, plan


def _run_all(jobs, workers=2):
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda job: job(), jobs))


def test_oracle_passes_every_task_renamed_with_one_edit(mini_suite):
    tasks = mini_suite.tasks
    results = _run_all([lambda t=t: _episode(mini_suite, t, "oracle", seed=1, rename=True, max_edits=1)
                        for t in tasks])
    for task, (reward, info, _) in zip(tasks, results):
        assert reward == 1.0, (task.id, info)
        assert info.renamed and info.exit_status == "submitted"
        if task.kind == "fix":
            assert info.actions == ["read pkg/core.py", "edit pkg/core.py", "test", "submit"]
            assert info.first_edit_right is True and info.public_pass is True
        else:
            assert info.actions == ["read pkg/core.py", "submit"] and info.answer == "10"


def test_oracle_without_tests_submits_straight_after_its_fix(mini_suite):
    """`run_tests=False` (the demo's informed demonstrations): no `test` call, still a pass."""
    task = next(t for t in mini_suite.tasks if t.kind == "fix")
    with episode_env(task, EnvConfig(rename=True), mini_suite, backend="local", seed=3) as env:
        reward, info = run_plan(env, oracle_plan(task, env, run_tests=False))
    assert reward == 1.0 and info.exit_status == "submitted", info
    assert info.actions == ["read pkg/core.py", "edit pkg/core.py", "submit"] and info.tests == 0


def _blind_fixes(task, family) -> bool:
    """Whether the family's blind repair of the buggy file is the reference fix (AST-equal)."""
    from fixrl.tasks.generate.mutate import repair

    ref = reference(task)
    path = task.file
    repaired = repair(ref.buggy[path], task.function, family)
    return repaired is not None and ast.dump(ast.parse(repaired)) == ast.dump(ast.parse(ref.fixed[path]))


def test_blind_passes_exactly_where_its_family_repairs(mini_suite):
    fams = mini_suite.families
    assert fams == ["flip_comparison", "swap_minmax", "wrong_arith"]
    combos = [(t, f) for t in mini_suite.tasks if t.kind == "fix" for f in fams]
    results = _run_all([lambda t=t, f=f: _episode(mini_suite, t, "blind", family=f, rename=True, max_edits=1)
                        for t, f in combos])
    predicted = [_blind_fixes(t, f) for t, f in combos]
    got = [info.outcome == "pass" for _, info, _ in results]
    assert got == predicted, [(t.id, f) for (t, f) in combos]
    assert 0 < sum(got) < len(got)
    for _, info, _ in results:
        assert info.reads == 0 and info.edits <= 1 and info.exit_status == "submitted"
        if info.edits:
            assert info.first_edit_right == (info.outcome == "pass")
    # the family is drawn uniformly from the suite's families
    drawn = set()
    task = mini_suite.get("clamp-minmax")
    for seed in range(12):
        drawn.add(BlindPlan(task, _FakeEnv(mini_suite), random.Random(seed)).family)
    assert drawn == set(fams)


class _FakeEnv:
    """Only what BlindPlan's constructor reads (the suite), to check the draw without a sandbox."""

    def __init__(self, suite):
        self.suite = suite


def test_random_policy_runs_and_rarely_passes(mini_suite):
    task = mini_suite.get("clamp-minmax")
    results = _run_all([lambda s=s: _episode(mini_suite, task, "random", seed=s, max_turns=5)
                        for s in range(6)])
    infos = [info for _, info, _ in results]
    assert all(info.outcome in ("pass", "fail") for info in infos)
    assert all(info.exit_status in ("submitted", "out_of_turns") for info in infos)
    assert all(info.malformed == 0 for info in infos)
    assert sum(info.outcome == "pass" for info in infos) <= 2
    kinds = {a.split()[0] for info in infos for a in info.actions}
    assert {"read", "edit", "submit"} <= kinds
    assert len({info.turns for info in infos}) > 1


def _shipped_suites():
    """The built-in suite and every other suite shipped under tasks/suites/."""
    from pathlib import Path

    from fixrl import tasks
    from fixrl.tasks import load_suite
    from fixrl.tasks.suites import BUILTIN_SUITE

    dirs = {Path(BUILTIN_SUITE).resolve()}
    for root in tasks.suites.__path__:
        dirs |= {d.resolve() for d in Path(root).iterdir() if (d / "tasks").is_dir()}
    return [load_suite(d) for d in sorted(dirs)]


@pytest.mark.slow
def test_blind_rate_on_builtin_suite_is_what_the_suite_implies():
    for suite in _shipped_suites():
        fix_tasks = [t for t in suite.tasks if t.kind == "fix" and t.function and t.file]
        fix_tasks = random.Random(0).sample(fix_tasks, min(len(fix_tasks), 40))  # a fixed sample
        results = _run_all([lambda t=t, i=i, suite=suite: _episode(suite, t, "blind", seed=i, rename=True, max_edits=1)
                            for i, t in enumerate(fix_tasks)])
        fams = suite.families
        # Per episode, the prediction for the family drawn; overall, the suite's expected rate.
        expected = sum(sum(_blind_fixes(t, f) for f in fams) / len(fams) for t in fix_tasks) / len(fix_tasks)
        rate = sum(info.outcome == "pass" for _, info, _ in results) / len(results)
        assert all(info.reads == 0 for _, info, _ in results)
        # A repair that is not the reference text may still pass (an equivalent fix): rare.
        mismatches = [(t.id, plan.family) for t, (_, info, plan) in zip(fix_tasks, results)
                      if (info.outcome == "pass") != _blind_fixes(t, plan.family)]
        assert len(mismatches) <= max(1, len(fix_tasks) // 10), (suite.name, mismatches)
        assert abs(rate - expected) < 0.15, (suite.name, rate, expected)
        assert rate < 0.5, suite.name


@pytest.mark.parametrize("line, fixed, old, new", [
    ("    return min(a, b)\n", "    return max(a, b)\n", "min", "max"),
    ("    return p - q\n", "    return p + q\n", "-", "+"),
    ("    return a > b\n", "    return a >= b\n", "> b", ">= b"),  # `>` alone is also in `>=`
    ("    for i in range(n):\n", "    for i in range(n + 1):\n", "n)", "n + 1)"),
    ("    for i in range(q):\n", "    for i in range(q + 1):\n", "(q)", "(q + 1)"),  # `q)` is twice
])
def test_shrink_edit_types_the_smallest_unique_snippet(line, fixed, old, new):
    text = "def f(a, b, n, p, q):\n    if a >= 0:\n        pass\n" + line + "    return n\n"
    step = next_edit(text, text.replace(line, fixed), 1)
    assert step == (line, fixed)  # the line-level edit the oracle computes first
    assert shrink_edit(text, *step) == (old, new)
    assert text.replace(old, new) == text.replace(line, fixed) and text.count(old) == 1


def test_shrink_edit_leaves_an_edit_it_cannot_place_alone():
    text = "x = 1\nx = 1\n"
    assert shrink_edit(text, "x = 1", "x = 2") == ("x = 1", "x = 2")  # not unique: not ours to place
    assert shrink_edit(text, "nowhere", "x") == ("nowhere", "x")


def test_on_the_gym_suite_plans_type_each_familys_usual_edit():
    """Where a suite declares `family_edits`, every oracle fix of a family is written alike and
    the blind baseline types its guessed family's edit: right exactly when the family is the
    bug's, and a wrong guess (old text not found) spends the one edit the suite allows."""
    from fixrl.tasks import load_suite
    from fixrl.tasks.suites import GYM_SUITE

    gym = load_suite(GYM_SUITE)
    one = {}
    for task in gym.tasks:
        one.setdefault(task.family, task)
    task, other = one["off_by_one"], one["swap_minmax"]
    usual = gym.family_edits["off_by_one"]

    reward, info, _ = _episode(gym, task, "oracle", seed=2, rename=True)
    assert reward == 1.0 and info.actions == [f"read {task.file}", f"edit {task.file}", "test", "submit"]
    with episode_env(task, EnvConfig(rename=True), gym, backend="local", seed=2) as env:
        plan = make_plan("oracle", task, env, random.Random(2))
        env.reset()
        env.step(plan.next_call(None))
        assert plan.next_call(None).arguments == {"path": task.file, "old": usual.old, "new": usual.new}

    right = _episode(gym, task, "blind", family="off_by_one", rename=True)
    wrong = _episode(gym, other, "blind", family="off_by_one", rename=True)
    assert right[0] == 1.0 and right[1].actions == [f"edit {task.file}", "submit"]
    assert wrong[0] == 0.0 and wrong[1].actions == [f"edit {other.file} (error)", "submit"]
    assert (wrong[1].failed_edits, wrong[1].edits) == (1, 0)

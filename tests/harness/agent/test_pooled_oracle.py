"""The oracle on a rollout pool of size 1 over a mixed sequence of tasks from four package
layouts (tests/layouts.py): every episode is rewarded, and its verdict is the one a fresh
sandbox gives the reference fix, test by test -- on the local backend (the pool's reused
forking check sandbox) and on Docker (a reused agent container, a new check container). And
the oracle on every shipped task through the same pooled path: reward 1 each."""
from __future__ import annotations

import itertools

import pytest
from layouts import LAYOUTS, write_layout_suite

from fixrl import tasks
from fixrl.envs import EnvConfig
from fixrl.harness.agent.local_rollouts import LocalRollouts
from fixrl.harness.agent.policies.scripted import ScriptedPolicy
from fixrl.sandbox import SandboxPool, open_sandbox
from fixrl.tasks.check.judge import judge_tree


@pytest.fixture(scope="module")
def mixed_tasks(tmp_path_factory) -> list[tasks.Task]:
    root = tmp_path_factory.mktemp("layouts")
    suites = [tasks.load_suite(write_layout_suite(root / name, name)) for name in LAYOUTS]
    return [t for group in itertools.zip_longest(*(s.tasks for s in suites)) for t in group if t is not None]


@pytest.fixture(scope="module")
def fresh_fixed(mixed_tasks, tmp_path_factory) -> dict[str, dict[str, str]]:
    root = tmp_path_factory.mktemp("fresh")
    out = {}
    for task in mixed_tasks:
        tree = tasks.materialize(task, root / task.id, "fixed")
        res = judge_tree(task, tree, lambda t: open_sandbox(t, backend="local"))
        assert res.passed, (task.id, res.reason)
        out[task.id] = dict(res.tests)
    return out


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.slow)])
def test_oracle_on_a_pool_of_one_matches_fresh_checks(backend, mixed_tasks, fresh_fixed, tiny_tokenizer, request):
    if backend == "docker":
        request.getfixturevalue("docker_available")
    policy = ScriptedPolicy("oracle", tokenizer=tiny_tokenizer)
    with SandboxPool(1, backend=backend) as pool:
        trajs = LocalRollouts(None, EnvConfig(), pool=pool).run(policy, mixed_tasks, 1, 0)
        assert pool.created == 1
    assert [t.task_id for t in trajs] == [t.id for t in mixed_tasks]
    for traj in trajs:
        assert traj.reward == 1.0 and traj.info.outcome == "pass", (traj.task_id, traj.info)
        assert traj.info.check_tests == fresh_fixed[traj.task_id], traj.task_id


def _shipped_suites() -> list[tasks.Suite]:
    """The built-in suite and every other suite shipped under tasks/suites/."""
    from pathlib import Path

    from fixrl.tasks.suites import BUILTIN_SUITE

    dirs = {Path(BUILTIN_SUITE).resolve()}
    for root in tasks.suites.__path__:
        dirs |= {d.resolve() for d in Path(root).iterdir() if (d / "tasks").is_dir()}
    return [tasks.load_suite(d) for d in sorted(dirs)]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 473 episodes: minutes alone, far more on a shared, loaded machine
def test_oracle_gets_reward_1_on_every_shipped_task_in_a_pool(tiny_tokenizer):
    """Every shipped task through the rollout path training uses (reused sandboxes, forking
    checks), renamed, one edit, without the `test` tool (the oracle then skips it: half the
    cost; the plan with tests is covered in tests/envs/test_env_scripted.py)."""
    policy = ScriptedPolicy("oracle", tokenizer=tiny_tokenizer)
    env = EnvConfig(rename=True, max_edits=1, tools=["read", "edit", "submit"])
    for suite in _shipped_suites():
        with SandboxPool(2, backend="local") as pool:
            trajs = LocalRollouts(suite, env, pool=pool).run(policy, suite.tasks, 1, 0)
        by_id = {t.id: t for t in suite.tasks}
        failed = [(t.task_id, t.info.outcome, t.info.error, t.info.dropped_files) for t in trajs if t.reward != 1.0]
        assert not failed, (suite.name, failed)
        assert sorted(t.task_id for t in trajs) == sorted(by_id), suite.name
        assert all(t.info.first_edit_right for t in trajs if by_id[t.task_id].kind == "fix"), suite.name
        assert all(t.info.renamed for t in trajs if by_id[t.task_id].function), suite.name

"""The oracle on a rollout pool of size 1 over a mixed sequence of tasks from four package
layouts (tests/layouts.py): every episode is rewarded, and its verdict is the one a fresh
sandbox gives the reference fix, test by test -- on the local backend (the pool's reused
forking check sandbox) and on Docker (a reused agent container, a new check container)."""
from __future__ import annotations

import itertools

import pytest
from layouts import LAYOUTS, write_layout_suite

from fixrl import tasks
from fixrl.envs import EnvConfig
from fixrl.harness.agent.local import LocalRollouts
from fixrl.harness.agent.policies.scripted import ScriptedPolicy
from fixrl.sandbox import SandboxPool, open_sandbox
from fixrl.tasks.judge import judge_tree


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

"""Faults on a real local Ray cluster: a node that joins mid-run gets work and is then killed
(every process of it, SIGKILL) while it holds episodes; a worker that hangs (SIGSTOP) is cut off
by its call deadline; the driver is killed. Every episode still ends, each either exactly as in
one process or as `error` -- never scored 0 for the fault -- and nothing is left on any node:
no worker directory, no container, no sandbox process."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from minisuite import write_mutant_suite
from raykit import comparable, containers, owner_records, wait_clean

from fixrl import tasks as tasks_pkg
from fixrl.envs import EnvConfig
from fixrl.envs.scripted import oracle_plan
from fixrl.harness.agent.local_rollouts import LocalRollouts
from fixrl.harness.agent.policies.scripted import ScriptedPolicy
from fixrl.harness.agent.ray import pool as ray_pool
from fixrl.harness.agent.ray.rollouts import RayRollouts
from fixrl.harness.agent.settings import ClusterConfig
from fixrl.sandbox import SandboxConfig
from fixrl.tasks.suites import GYM_SUITE

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def gym():
    return tasks_pkg.load_suite(GYM_SUITE)


def _local(gym, chosen, n, env, policy):
    with LocalRollouts(gym, env, SandboxConfig(pool_size=6)) as local:
        return local.run(policy, chosen, n, seed=0)


def _assert_same_or_error(on_ray, local):
    """Each episode as in one process, or ended as error; none scored as a failure for a fault."""
    assert len(on_ray) == len(local)
    for x, y in zip(on_ray, local, strict=True):
        if x.errored:
            assert x.reward == 0.0 and x.info.error and x.info.hidden_pass is None
        else:
            assert comparable(x) == comparable(y)


def test_a_node_joins_gets_work_and_is_killed_mid_run(ray_cluster, gym, docker_available):
    """Node C (Docker backend by its own setting, the others local) joins after the first
    episode ends (the test waits for its worker to start, so that the run cannot end first),
    takes episodes, and has every process SIGKILLed while it holds some: they move to the other
    nodes and replay there; the run ends with every episode passing as locally."""
    chosen = gym.split("heldout")[:4]
    env = EnvConfig(rename=True)
    # read, edit, submit (no `test` call, whose timing differs): token-exact episodes
    policy = ScriptedPolicy("oracle-untested", plan=lambda task, env, rng: oracle_plan(task, env, run_tests=False))
    state: dict = {}

    with RayRollouts(gym, env, cluster=ClusterConfig(ray_cluster.address)) as rollouts:
        def progress(traj):
            if "node" not in state:
                state["node"] = ray_cluster.add_node(3, backend="docker")
                rollouts.pool.refresh(force=True)   # as the loop's next look would, then its start
                rollouts.pool.wait_started(120)
                return
            w = next((w for w in rollouts.pool.workers() if w.node == state["node"].node_id), None)
            if "killed" not in state and w is not None and w.ready and w.episodes >= 1 and w.live >= 1:
                state["live"], state["session"] = w.live, w.info.session
                state["killed"] = ray_cluster.kill_node(state["node"]) or True

        on_ray = rollouts.run(policy, chosen, 4, seed=0, progress=progress)
        stats = rollouts.stats()
    assert state.get("killed"), f"node C never held episodes after finishing one: {stats}"
    assert ray_cluster.wait_gone(state["node"])
    c = stats[state["node"].node_id]
    assert c["backend"] == "docker" and c["episodes"] >= 1 and c["lost"], c
    assert not any(t.errored for t in on_ray), [t.info.error for t in on_ray if t.errored]
    assert all(t.reward == 1.0 for t in on_ray)
    local = _local(gym, chosen, 4, env, policy)
    assert [x.token_ids for x in on_ray] == [y.token_ids for y in local]
    _assert_same_or_error(on_ray, local)
    left = wait_clean(state["node"].root, [state["session"]], docker=True)
    assert not any(left.values()), left
    left = wait_clean(ray_cluster.root, [], docker=False)
    assert not any(left.values()), left


class _StopAtTurn(ScriptedPolicy):
    """The oracle, which SIGSTOPs one worker process right after generating turn `turn` (so the
    calls of that turn find it hung)."""

    def __init__(self, turn: int, pid_of):
        super().__init__("oracle")
        self.turn, self.pid_of, self.calls, self.stopped = turn, pid_of, 0, None

    def generate(self, requests):
        out = super().generate(requests)
        self.calls += 1
        if self.calls == self.turn:
            self.stopped = self.pid_of()
            os.kill(self.stopped, signal.SIGSTOP)
        return out


def test_a_hung_worker_is_cut_off_by_its_deadline(ray_cluster, gym):
    """A worker stopped (SIGSTOP) before its episodes' `test` calls: each call waits no longer
    than its deadline (the test timeout, 10 s, plus a 2 s margin), the worker is killed, and its
    episodes finish on the other node exactly as they would have. (10 s: the suite's tests, run
    under bubblewrap on a machine other jobs load, must not time out in one run and not the other.)"""
    chosen = gym.split("heldout")[:2]
    env = EnvConfig(rename=True, tool_timeouts={"test": 10.0})
    with RayRollouts(gym, env, cluster=ClusterConfig(ray_cluster.address, call_margin=2.0)) as rollouts:
        victim = rollouts.pool.workers()[0]
        policy = _StopAtTurn(3, lambda: victim.info.pid)  # the oracle: read, edit, test, submit
        on_ray = rollouts.run(policy, chosen, 2, seed=0)
        stats = rollouts.stats()
    # cut off at the `test` call's own deadline (10 + 2 s), not a default one, nor never
    assert policy.stopped == victim.info.pid and stats[victim.node]["lost"] == "`step` did not answer within 12 s"
    assert not any(t.errored for t in on_ray) and all(t.reward == 1.0 for t in on_ray)
    _assert_same_or_error(on_ray, _local(gym, chosen, 2, env, ScriptedPolicy("oracle")))
    left = wait_clean(ray_cluster.root, [victim.info.session], docker=False)
    assert not any(left.values()), left


def test_the_drivers_death_leaves_nothing_on_the_nodes(ray_cluster, docker_available, tmp_path):
    """`fixrl eval --ray` on the Docker backend, SIGKILLed mid-run: Ray ends the job's workers,
    and their reapers remove the containers (by session label) and the workers' directories."""
    cmd = [sys.executable, "-m", "fixrl.harness.cli", "eval", "--policy", "oracle", "--suite", str(GYM_SUITE),
           "-n", "3", "-k", "1", "--no-progress", "--backend", "docker", "--ray", ray_cluster.address,
           "--out", str(tmp_path / "out")]
    driver = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        end, sessions = time.monotonic() + 240, []
        while time.monotonic() < end and driver.poll() is None:
            sessions = [r["session"] for r in owner_records(ray_cluster.root)]
            if len(sessions) == 2 and len(containers(sessions)) >= 3:
                break
            time.sleep(0.2)
        assert driver.poll() is None, driver.stderr.read().decode()[-2000:]
        assert len(containers(sessions)) >= 3
    finally:
        driver.kill()
        driver.wait()
    left = wait_clean(ray_cluster.root, sessions, docker=True, seconds=60)
    assert not any(left.values()), left
    assert not (tmp_path / "out" / "results.json").exists()


_OPS = '''"""Small helpers."""


def clamp(x, lo, hi):
    return max(lo, min(x, hi))
'''
_PUBLIC = "from ops import clamp\n\n\ndef test_inside():\n    assert clamp(5, 0, 10) == 5\n"
_HIDDEN = ("from ops import clamp\n\n\ndef test_clamp():\n    assert clamp(-3, 0, 10) == 0\n"
           "    assert clamp(30, 0, 10) == 10\n")


class _KillAtTurn(ScriptedPolicy):
    """The oracle, which kills one worker (a real actor kill) right after generating turn `turn`."""

    def __init__(self, turn: int, kill):
        super().__init__("oracle")
        self.turn, self.kill, self.calls = turn, kill, 0

    def generate(self, requests):
        out = super().generate(requests)
        self.calls += 1
        if self.calls == self.turn:
            self.kill()
        return out


def test_a_replay_that_sees_something_else_ends_as_error(ray_cluster, tmp_path):
    """The task's setup writes a random line into the file the agent reads, so an episode cannot
    be replayed: the episode whose worker is killed after its read ends as `error` (never a fail),
    the one on the other worker passes."""
    root = write_mutant_suite(tmp_path / "s", source=_OPS, public_tests=_PUBLIC, hidden_tests=_HIDDEN,
                              picks=[("clamp-minmax", "clamp", "swap_minmax", None)],
                              suite={"name": "noisy", "defaults": {
                                  "repo": "repo", "file": "ops.py", "public_tests": "python -m pytest -q tests",
                                  "setup": ["python -c \"import random; open('ops.py', 'a').write('# %d\\n' % "
                                            "random.getrandbits(64))\""]}})
    suite = tasks_pkg.load_suite(root)
    with RayRollouts(suite, EnvConfig(), cluster=ClusterConfig(ray_cluster.address)) as rollouts:
        victim = rollouts.pool.workers()[0]   # the first episode starts there
        policy = _KillAtTurn(2, lambda: rollouts.pool._lose(victim, "killed by the test"))
        first, second = rollouts.run(policy, suite.tasks, 2, seed=0)
    assert first.errored and "cannot be replayed" in first.info.error and first.reward == 0.0
    assert first.info.hidden_pass is None
    assert second.info.outcome == "pass" and second.reward == 1.0
    left = wait_clean(ray_cluster.root, [], docker=False)
    assert not any(left.values()), left


def test_when_no_node_is_left_the_episodes_end_as_error(ray_cluster, gym, monkeypatch):
    """A run on one node whose every process is SIGKILLed mid-episode, no other node to move to:
    after the grace for a node to join, each episode ends as `error` (no reward, no verdict),
    none is lost or scored as a failed attempt, and the node is left clean by its reaper."""
    monkeypatch.setattr(ray_pool, "JOIN_GRACE_SECONDS", 3.0)
    chosen = gym.split("heldout")[:2]
    node = ray_cluster.add_node(2)
    try:
        with RayRollouts(gym, EnvConfig(), cluster=ClusterConfig(ray_cluster.address), nodes=[node.node_id]) as rollouts:
            session = rollouts.pool.workers()[0].info.session
            trajs = rollouts.run(_KillAtTurn(2, lambda: ray_cluster.kill_node(node)), chosen, 1, seed=0)
            stats = rollouts.stats()
    finally:
        ray_cluster.kill_node(node)
        ray_cluster.wait_gone(node)
    assert [t.task_id for t in trajs] == [t.id for t in chosen]
    assert stats[node.node_id]["lost"] and stats[node.node_id]["episodes"] == 0
    for t in trajs:
        assert t.errored and t.reward == 0.0 and t.info.hidden_pass is None
        assert "no worker node is alive" in t.info.error, t.info.error
    left = wait_clean(node.root, [session], docker=False)
    assert not any(left.values()), left

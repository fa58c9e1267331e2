"""Episodes on a real multi-node Ray cluster (`ray start` processes on this machine) against
the same episodes in one process: scripted `fixrl eval` (oracle, its results and trajectories),
the random and blind plans (which look at the workspace through the view) with renaming, the
work spread over both nodes, nothing left on the nodes after a run or an interrupted one, and
clear errors for a cluster that cannot serve."""
from __future__ import annotations

import json
import sys

import pytest
from raykit import comparable, left_behind, wait_clean

from fixrl import tasks as tasks_pkg
from fixrl.envs import EnvConfig
from fixrl.evals.run import EvalResult, load_trajectories_gz
from fixrl.harness.agent.local_rollouts import LocalRollouts
from fixrl.harness.agent.policies.scripted import ScriptedPolicy
from fixrl.harness.agent.ray import pool as ray_pool
from fixrl.harness.agent.ray.pool import WorkerPool
from fixrl.harness.agent.ray.rollouts import RayRollouts
from fixrl.harness.agent.rollouts import open_rollouts
from fixrl.harness.agent.settings import ClusterConfig, ClusterError
from fixrl.harness.cli import build_parser, main
from fixrl.sandbox import SandboxConfig, SandboxConfigError
from fixrl.tasks.suites import BUILTIN_SUITE, GYM_SUITE

pytestmark = pytest.mark.ray

HELDOUT = ["gym-count_steps-flip_comparison", "gym-floor_all-swap_minmax", "gym-grade-wrong_arith"]


@pytest.fixture(scope="module")
def gym():
    return tasks_pkg.load_suite(GYM_SUITE)


def _heldout_ids(gym) -> list[str]:
    ids = [t.id for t in gym.split("heldout")]
    chosen = [i for i in HELDOUT if i in ids]
    return chosen if len(chosen) == 3 else ids[:3]


def test_scripted_eval_on_the_cluster_equals_one_process(ray_cluster, gym, tmp_path, capsys):
    """`fixrl eval --ray ADDRESS` gives the pass@k and the trajectories of the same command
    without --ray: the same episodes, observations, rewards and episode records."""
    common = ["eval", "--policy", "oracle", "--suite", str(GYM_SUITE), "-n", "2", "-k", "1,2", "--rename",
              "--no-progress", "--json", "--task", ",".join(_heldout_ids(gym))]
    assert main([*common, "--out", str(tmp_path / "ray"), "--ray", ray_cluster.address]) == 0
    assert main([*common, "--out", str(tmp_path / "local"), "--pool-size", "6"]) == 0
    capsys.readouterr()
    on_ray, local = ({k: v for k, v in EvalResult.load(tmp_path / x).to_dict().items()
                      if k not in ("seconds", "created")} for x in ("ray", "local"))
    assert on_ray == local and on_ray["overall"]["pass@1"]["mean"] == 1.0
    a = load_trajectories_gz(tmp_path / "ray" / "trajectories.jsonl.gz")
    b = load_trajectories_gz(tmp_path / "local" / "trajectories.jsonl.gz")
    assert len(a) == len(b) == 6
    assert [comparable(x) for x in a] == [comparable(y) for y in b]
    assert all(x.info.renamed for x in a)  # renaming ran on the workers, seeded as locally
    left = wait_clean(ray_cluster.root, [], docker=False)
    assert not any(left.values()), left


@pytest.mark.parametrize("kind", ["random", "blind"])
def test_plans_that_look_at_the_workspace_give_the_same_episodes(ray_cluster, kind):
    """The random plan lists files with `exec` and reads them, the blind one reads the file it
    edits: through the cluster's view they see what they see locally. Both nodes get work."""
    suite = tasks_pkg.load_suite(BUILTIN_SUITE)
    chosen = [t for t in suite.tasks if t.kind == "fix"][:3]
    env = EnvConfig(rename=True, max_turns=5)
    policy = ScriptedPolicy(kind, seed=7)
    with RayRollouts(suite, env, cluster=ClusterConfig(ray_cluster.address)) as rollouts:
        on_ray = rollouts.run(policy, chosen, 2, seed=3)
        stats = rollouts.stats()
    with LocalRollouts(suite, env, SandboxConfig(pool_size=6)) as local:
        there = local.run(policy, chosen, 2, seed=3)
    assert [comparable(x) for x in on_ray] == [comparable(y) for y in there]
    assert not any(t.errored for t in on_ray)
    assert len(stats) == 2 and all(s["episodes"] >= 1 and s["lost"] is None for s in stats.values()), stats


def test_interrupted_run_releases_every_sandbox(ray_cluster, gym):
    """Ctrl-C in the middle of a run: the episodes in flight are aborted on their workers, the
    workers shut down, and no worker directory, sandbox or sandbox process is left on a node."""
    chosen = [gym.get(i) for i in _heldout_ids(gym)]
    seen = []

    def interrupt(traj):
        seen.append(traj)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), \
            RayRollouts(gym, EnvConfig(rename=True), cluster=ClusterConfig(ray_cluster.address)) as rollouts:
        rollouts.run(ScriptedPolicy("oracle"), chosen, 3, seed=0, progress=interrupt)
    assert len(seen) == 1
    left = left_behind(ray_cluster.root, [], docker=False)
    assert left["dirs"] == [], left   # closing waited for the workers to release everything
    # their reapers see the directories gone and end within a poll or two
    left = wait_clean(ray_cluster.root, [], docker=False)
    assert not any(left.values()), left


def test_rollouts_opened_inside_others_share_their_workers(ray_cluster, gym):
    """The demo holds rollouts for its evaluations while its GRPO stage opens its own: the inner
    ones use the same workers (a second set waits for the slots the first holds, then fails, as
    another job's would), closing them leaves the outer ones serving, and asking for another
    backend meanwhile is a clear error, not a wait."""
    task = gym.get(_heldout_ids(gym)[0])
    policy = ScriptedPolicy("oracle")
    with RayRollouts(gym, EnvConfig(), cluster=ClusterConfig(ray_cluster.address)) as outer:
        with open_rollouts(gym, EnvConfig(rename=True), cluster=ClusterConfig("auto", retries=1)) as inner:
            assert inner.pool is outer.pool
            assert [t.reward for t in inner.run(policy, [task], 2, seed=0)] == [1.0, 1.0]
        inner.close()   # a second close releases nothing more
        # workers of their own (another job's, as it were) find every node's slots taken
        with pytest.raises(ClusterError, match="held by another job"):
            WorkerPool(ClusterConfig(ray_cluster.address), start_seconds=5.0)
        assert [t.reward for t in outer.run(policy, [task], 2, seed=0)] == [1.0, 1.0]
        with pytest.raises(ClusterError, match="another backend|backend docker"):
            RayRollouts(gym, EnvConfig(), SandboxConfig(backend="docker"), ClusterConfig(ray_cluster.address))
        with pytest.raises(ClusterError, match="one cluster at a time"):
            RayRollouts(gym, EnvConfig(), cluster=ClusterConfig("127.0.0.1:1"))
        assert all(s["lost"] is None for s in outer.stats().values())
    left = wait_clean(ray_cluster.root, [], docker=False)
    assert not any(left.values()), left
    with RayRollouts(gym, EnvConfig(), cluster=ClusterConfig(ray_cluster.address)) as again:   # a fresh pool
        assert again.pool is not outer.pool and [t.reward for t in again.run(policy, [task], 1)] == [1.0]


def test_the_bench_measures_the_cluster(ray_cluster, capsys):
    """`fixrl bench rollout --ray ADDRESS` on one node: latencies, both arms' episodes all
    passing, and a projection with positive figures."""
    assert main(["bench", "rollout", "--ray", ray_cluster.address, "--nodes", "1", "--episodes", "4",
                 "--calls", "20", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert set(r["tool_call"]) == {"read", "no-op"}
    assert all(r["tool_call"][k][s]["calls"] == 20 for k in ("read", "no-op") for s in ("local", "ray"))
    (arm,) = r["episodes"]
    for side in ("local", "ray"):
        assert arm[side]["episodes"] == arm[side]["passed"] == 4 and arm[side]["errors"] == 0
        assert arm[side]["start_seconds_per_episode"] > 0
    assert arm["ray"]["again"]["driver_cpu_s"] > 0   # the widest arm, done again for the steady cost
    p = r["projection"]
    assert p["driver_cpu_per_episode_steady_ms"] > 0 and p["driver_cpu_per_new_task_ms"] >= 0
    assert p["check_10s"]["slots_one_driver_keeps_busy"] > p["gym"]["slots_one_driver_keeps_busy"] > 0


def test_a_cluster_that_cannot_serve_is_a_clear_error(ray_cluster, monkeypatch, capsys):
    assert main(["eval", "--policy", "oracle", "--suite", str(GYM_SUITE), "-n", "1", "-k", "1",
                 "--no-progress", "--ray", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "--ray 127.0.0.1:1" in err and "ray start --head" in err
    with pytest.raises(ClusterError, match="fixrl_sandbox"):
        WorkerPool(ClusterConfig(ray_cluster.address), nodes=[])   # no node of the cluster to use
    with pytest.raises(SandboxConfigError, match="retries"):
        open_rollouts(None, None, None, ClusterConfig(ray_cluster.address, retries=-1))
    monkeypatch.setitem(sys.modules, "ray", None)   # as on a machine without the extra
    with pytest.raises(ClusterError, match=r"pip install 'fixrl\[ray\]'"):
        open_rollouts(None, None, None, ClusterConfig(ray_cluster.address))


def test_a_node_with_other_fixrl_code_gets_no_episode(ray_cluster, monkeypatch):
    """A node that runs other fixrl code than the driver (another version, an edited checkout)
    could judge the same fix differently: its worker refuses to start and says why."""
    monkeypatch.setattr(ray_pool, "code_digest", lambda: "fixrl 0.0.1 (0123456789ab)")
    with pytest.raises(ClusterError, match=r"runs fixrl \S+ \(\w+\), the driver fixrl 0.0.1 .*same fixrl on every node"):
        WorkerPool(ClusterConfig(ray_cluster.address))
    left = wait_clean(ray_cluster.root, [], docker=False)
    assert not any(left.values()), left


def test_a_node_that_cannot_serve_is_left_out_and_named(ray_cluster, gym):
    """A node whose own setting is wrong (FIXRL_SANDBOX_BACKEND=podman) gets no episode: its
    worker fails to start, the pool names why, and the run goes on the other nodes."""
    bad = ray_cluster.add_node(1, backend="podman")
    try:
        with RayRollouts(gym, EnvConfig(), cluster=ClusterConfig(ray_cluster.address)) as rollouts:
            trajs = rollouts.run(ScriptedPolicy("oracle"), [gym.get(_heldout_ids(gym)[0])], 2, seed=0)
            stats, failed = rollouts.stats(), dict(rollouts.pool._failed)
    finally:
        ray_cluster.kill_node(bad)
        ray_cluster.wait_gone(bad)
    assert all(t.reward == 1.0 for t in trajs)
    assert stats[bad.node_id]["episodes"] == 0 and "FIXRL_SANDBOX_BACKEND='podman'" in failed[bad.node_id]
    assert sum(s["episodes"] for s in stats.values()) == 2


def test_config_and_cli_carry_the_setting(tmp_path, capsys):
    """--ray reaches every job's sandbox config (no cluster needed to see it)."""
    assert main(["grpo", "--model", "m", "--suite", "s", "--out", str(tmp_path / "r"), "--ray", "auto",
                 "--ray-retries", "5", "--print-config"]) == 0
    cluster = json.loads(capsys.readouterr().out)["cluster"]
    assert (cluster["address"], cluster["retries"]) == ("auto", 5)
    for argv in (["eval", "--policy", "oracle", "--ray", "auto"], ["probe", "--policy", "oracle", "--ray", "auto"],
                 ["rollout", "--policy", "oracle", "--ray", "auto"]):
        assert vars(build_parser().parse_args(argv))["episode.cluster.address"] == "auto"
    assert build_parser().parse_args(["demo", "--ray", "auto"]).ray == "auto"
    assert build_parser().parse_args(["bench", "rollout", "--ray", "local"]).ray == "local"
    with pytest.raises(SandboxConfigError, match="ray"):
        ClusterConfig(" ").validate()

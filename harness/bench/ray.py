"""fixrl bench rollout --ray: the environment side on a Ray cluster against the local pool, in
the same run, with a scripted policy (oracle: read, edit, test, submit) on the gym suite.

1. Per-tool-call latency: one episode through `LocalEnvSide` and one through `RayEnvSide` on a
   one-node cluster, the same calls sent to both in alternating blocks -- `read` (a real tool
   call) and a no-op (a malformed call, answered at once: the seam's own cost) -- p50, p90, and
   the driver's CPU per call (the process's CPU time, every thread included: Ray's and the call's).
2. Episodes per minute at 1, 2, 3 worker nodes (each `--slots` sandboxes) against the
   single-process loop with as many sandboxes (the same lockstep width). Every arm first runs as
   many episodes as its width untimed, so that sandboxes and trees are in place (a training run
   keeps its workers for all its steps).
3. The projection: the driver's steady CPU per episode (the widest cluster arm's run done again,
   every tree already shipped, less what Ray's threads spend while the driver waits, measured
   idle) and per turn (from 1.), against the time an episode holds a slot on its node (start,
   tools and check, measured on the workers): the slots one driver keeps busy = slot-seconds per
   episode / driver seconds per episode, for the gym suite and for a suite whose checks take
   10 s. Past that many slots the driver is the bottleneck. On one machine the nodes share its
   cores, so the cluster arms cannot be faster than the local loop here; the projection is what
   carries to real machines (a scripted policy: a model's generation in the driver comes on
   top, and is then the first bottleneck).

`--ray local` starts a cluster of `ray start` processes on this machine (a head and `--nodes`
workers of `--slots` slots, torn down after); `--ray auto|ADDRESS` uses a running cluster's first
`--nodes` nodes with their own slots.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from fixrl import tasks as tasks_pkg
from fixrl.envs import EnvConfig
from fixrl.envs.types import Malformed, ToolCall
from fixrl.harness.agent.local_rollouts import LocalEnvSide, LocalRollouts
from fixrl.harness.agent.policies.scripted import ScriptedPolicy
from fixrl.harness.agent.ray.envside import RayEnvSide
from fixrl.harness.agent.ray.local_cluster import LocalCluster
from fixrl.harness.agent.ray.pool import RESOURCE, WorkerPool, connect
from fixrl.harness.agent.ray.rollouts import RayRollouts
from fixrl.harness.agent.settings import ClusterConfig
from fixrl.harness.bench.errors import BenchError
from fixrl.sandbox import SandboxConfig, SandboxPool
from fixrl.tasks.suites import GYM_SUITE

CHECK_SECONDS_PROJECTED = 10.0


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def _idle_cpu(seconds: float) -> float:
    """The driver's CPU seconds per second while it waits for nothing (Ray's own threads: its
    core worker's polling and heartbeats), a cost that does not grow with the episodes."""
    c0, t0 = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    return (time.process_time() - c0) / (time.perf_counter() - t0)


def _call_latency(suite, task, address: str, node: str, calls: int, backend: str) -> dict[str, Any]:
    """Each call kind through both sides, in alternating blocks of 20: `read` (a real tool call:
    path resolution and a file read in the sandbox) and `no-op` (a malformed call the env answers
    at once: the seam's own cost, Ray's round trip against a thread hop)."""
    env = EnvConfig(max_turns=10 ** 6, max_malformed=10 ** 6)
    kinds = {"read": ToolCall("read", {"path": task.file}), "no-op": Malformed("bench")}
    lat = {(k, s): [] for k in kinds for s in ("local", "ray")}
    cpu = dict.fromkeys(lat, 0.0)
    workers = WorkerPool(ClusterConfig(address), SandboxConfig(backend=backend), nodes=[node])
    with SandboxPool(1, backend=backend) as pool, tempfile.TemporaryDirectory(prefix="fixrl-bench-ray-") as tmp:
        sides = {"local": LocalEnvSide(suite, env, pool, Path(tmp)),
                 "ray": RayEnvSide(workers, suite, env, retries=0, margin=60.0)}
        try:
            for side in sides.values():
                side.start(0, task, 0).result()
                for call in kinds.values():  # warm: first calls pay for imports and connections
                    for _ in range(10):
                        side.step(0, call).result()
            idle = _idle_cpu(5.0)
            for _ in range(max(1, calls // 20)):
                for (kind, name), xs in lat.items():
                    side, call = sides[name], kinds[kind]
                    c0 = time.process_time()
                    for _ in range(20):
                        t0 = time.perf_counter()
                        side.step(0, call).result()
                        xs.append(time.perf_counter() - t0)
                    cpu[kind, name] += time.process_time() - c0
            for side in sides.values():
                side.finish(0, None).result()
        finally:
            for side in sides.values():
                side.close()
            workers.close()
    out: dict[str, Any] = {}
    for kind in kinds:
        row = {name: _latency_row(lat[kind, name], cpu[kind, name], idle) for name in ("local", "ray")}
        row["overhead_p50_ms"] = round(row["ray"]["p50_ms"] - row["local"]["p50_ms"], 3)
        row["overhead_p90_ms"] = round(row["ray"]["p90_ms"] - row["local"]["p90_ms"], 3)
        out[kind] = row
    return out, idle


def _latency_row(xs: list[float], cpu: float, idle: float) -> dict[str, Any]:
    """p50, p90 and the driver's CPU per call: all of it, and less what it spends idle meanwhile."""
    n = len(xs)
    return {"calls": n, "p50_ms": round(1e3 * _pct(xs, 0.5), 3), "p90_ms": round(1e3 * _pct(xs, 0.9), 3),
            "driver_cpu_per_call_ms": round(1e3 * cpu / n, 3),
            "driver_marginal_cpu_per_call_ms": round(1e3 * max(0.0, cpu - idle * sum(xs)) / n, 3)}


def _slot_seconds(traj) -> float:
    """Seconds the episode's environment worked on its node: its start (a sandbox, the buggy
    tree, setup, renaming), its tool calls and its hidden check."""
    return sum(traj.info.seconds.get(k, 0.0) for k in ("start", "tools", "check"))


def _timed(rollouts, policy, tasks, seed: int) -> tuple[list, float, float]:
    """The trajectories, wall seconds and driver CPU seconds of one run of every task once."""
    c0, t0 = time.process_time(), time.perf_counter()
    trajs = rollouts.run(policy, tasks, 1, seed)
    return trajs, time.perf_counter() - t0, time.process_time() - c0


def _arm(rollouts, policy, tasks, seed: int, width: int, again: bool = False) -> dict[str, Any]:
    """One timed run of every task once, after an untimed one of the first `width` tasks (the
    sandboxes, and on the cluster the workers and those tasks' trees, in place). `again`: then
    the same run once more, every task's tree already on the nodes (the driver's steady cost)."""
    rollouts.run(policy, tasks[:width], 1, seed + 1)
    trajs, seconds, cpu = _timed(rollouts, policy, tasks, seed)
    n = len(trajs)
    out = {"episodes": n, "lockstep": width, "new_tasks": max(0, len(tasks) - width), "seconds": round(seconds, 2),
            "episodes_per_min": round(n / seconds * 60, 1), "driver_cpu_s": round(cpu, 2),
            "driver_cpu_per_episode_ms": round(1e3 * cpu / n, 2),
            "turns_per_episode": round(sum(t.info.turns for t in trajs) / n, 2),
            "errors": sum(t.errored for t in trajs), "passed": sum(t.reward == 1.0 for t in trajs),
            "slot_seconds_per_episode": round(sum(_slot_seconds(t) for t in trajs) / n, 3),
            "start_seconds_per_episode": round(sum(t.info.seconds.get("start", 0.0) for t in trajs) / n, 3),
            "check_seconds_per_episode": round(sum(t.info.seconds.get("check", 0.0) for t in trajs) / n, 3)}
    if again:
        _, seconds, cpu = _timed(rollouts, policy, tasks, seed)
        out["again"] = {"seconds": round(seconds, 2), "driver_cpu_s": round(cpu, 3)}
    return out


def _projection(latency: dict, idle: float, arms: list[dict]) -> dict[str, Any]:
    """Slots (and 8-slot nodes) one driver keeps busy: the seconds an episode holds a slot on its
    node over the driver's CPU seconds per episode. The driver's steady cost per episode is that
    of the widest cluster arm's run done again (every tree already shipped, as for GRPO's groups
    and pass@k's samples), less Ray's idle threads over its time (a constant, not a cost per
    episode); shipping a task's tree the first time costs the difference between its two runs.
    An episode's slot time is the one-node arm's (the least shared cores here)."""
    widest = arms[-1]["ray"]
    n, first, again = widest["episodes"], widest, widest["again"]
    steady = max(1e-6, (again["driver_cpu_s"] - idle * again["seconds"]) / n)
    first_cost = (first["driver_cpu_s"] - idle * first["seconds"]) / n
    per_new_task = max(0.0, (first_cost - steady) * n / max(1, first["new_tasks"]))
    per_turn = latency["read"]["ray"]["driver_marginal_cpu_per_call_ms"] / 1e3
    turns = first["turns_per_episode"]
    # the one-node arm: its sandboxes share the machine's cores with the fewest others
    slot, check = arms[0]["ray"]["slot_seconds_per_episode"], arms[0]["ray"]["check_seconds_per_episode"]
    out = {"driver_cpu_per_episode_ms": first["driver_cpu_per_episode_ms"], "driver_idle_cpu": round(idle, 4),
           "driver_cpu_per_episode_steady_ms": round(1e3 * steady, 2),
           "driver_cpu_per_new_task_ms": round(1e3 * per_new_task, 2),
           "driver_cpu_per_turn_ms": round(1e3 * per_turn, 3), "turns_per_episode": turns,
           "driver_cpu_per_episode_fixed_ms": round(1e3 * max(0.0, steady - turns * per_turn), 2),
           "driver_episodes_per_s": round(1 / steady, 1)}
    for name, seconds in (("gym", slot), ("check_10s", slot - check + CHECK_SECONDS_PROJECTED)):
        busy, new = seconds / steady, seconds / (steady + per_new_task)
        out[name] = {"slot_seconds_per_episode": round(seconds, 3), "slots_one_driver_keeps_busy": round(busy, 1),
                     "nodes_of_8_slots": round(busy / 8, 1), "slots_every_episode_a_new_task": round(new, 1)}
    return out


def _cluster(cfg, tmp: Path, stack):
    """(address, worker node ids, slots per node) of the cluster to measure on."""
    if cfg.ray == "local":
        cluster = stack.enter_context(LocalCluster(tmp / "cluster"))
        nodes = [cluster.add_node(cfg.slots) for _ in range(cfg.nodes)]
        return cluster.address, [n.node_id for n in nodes], [cfg.slots] * len(nodes)
    ray = connect(cfg.ray)
    found = [(n["NodeID"], int(n["Resources"].get(RESOURCE, 0))) for n in ray.nodes()
             if n.get("Alive") and n["Resources"].get(RESOURCE, 0) >= 1][: cfg.nodes]
    return cfg.ray, [n for n, _ in found], [s for _, s in found]


def measure(cfg) -> dict[str, Any]:
    """Every arm on the cluster `cfg.ray` names (harness/bench/rollout.py's Config) and the projection."""
    if min(cfg.nodes, cfg.slots, cfg.calls, cfg.episodes) < 1:
        raise BenchError("bench rollout --ray: nodes, slots, calls and episodes must be >= 1")
    suite = tasks_pkg.load_suite(Path(cfg.suite) if cfg.suite else GYM_SUITE)
    tasks = [t for t in suite.tasks if t.kind == "fix"][: cfg.episodes]
    policy = ScriptedPolicy("oracle")
    env = EnvConfig(rename=True)
    with tempfile.TemporaryDirectory(prefix="fixrl-bench-ray-", dir="/tmp") as tmp, contextlib.ExitStack() as stack:
        address, nodes, slots = _cluster(cfg, Path(tmp), stack)
        if not nodes:
            raise BenchError(f"bench rollout --ray {cfg.ray}: no node offers fixrl_sandbox slots")
        latency, idle = _call_latency(suite, tasks[0], address, nodes[0], cfg.calls, cfg.backend)
        arms = []
        for k in range(1, len(nodes) + 1):
            width = sum(slots[:k])
            with LocalRollouts(suite, env, SandboxConfig(backend=cfg.backend, pool_size=width)) as local:
                one = _arm(local, policy, tasks, cfg.seed, width)
            with RayRollouts(suite, env, SandboxConfig(backend=cfg.backend), ClusterConfig(address),
                             nodes=nodes[:k]) as r:
                on_ray = _arm(r, policy, tasks, cfg.seed, width, again=k == len(nodes))
            arms.append({"nodes": k, "local": one, "ray": on_ray,
                         "ray_over_local": round(on_ray["episodes_per_min"] / one["episodes_per_min"], 2)})
    return {"cpus": os.cpu_count(), "suite": suite.name, "policy": "oracle", "backend": cfg.backend,
            "cluster": "local (ray start processes on this machine)" if cfg.ray == "local" else address,
            "slots_per_node": slots, "tool_call": latency, "episodes": arms,
            "projection": _projection(latency, idle, arms)}


def show(r: dict[str, Any], console: Any) -> None:
    """The latency, the episode arms and the projection."""
    t = Table(title="one tool call, local pool against Ray (alternating blocks of 20)")
    for col in ("call", "", "p50 ms", "p90 ms", "driver CPU ms/call", "less idle"):
        t.add_column(col, justify="right")
    for kind, lat in r["tool_call"].items():
        for name in ("local", "ray"):
            t.add_row(f"{kind} x{lat[name]['calls']}" if name == "local" else "",
                      "local pool" if name == "local" else "through Ray", f"{lat[name]['p50_ms']:.2f}",
                      f"{lat[name]['p90_ms']:.2f}", f"{lat[name]['driver_cpu_per_call_ms']:.2f}",
                      f"{lat[name]['driver_marginal_cpu_per_call_ms']:.2f}")
        t.add_row("", "Ray's overhead", f"{lat['overhead_p50_ms']:+.2f}", f"{lat['overhead_p90_ms']:+.2f}", "", "")
    console.print(t)
    t = Table(title=f"scripted episodes/min, {r['suite']} suite, {r['cpus']} CPUs shared by every node")
    for col in ("worker nodes", "lockstep", "single process", "on the cluster", "ratio", "driver CPU ms/episode"):
        t.add_column(col, justify="right")
    for a in r["episodes"]:
        t.add_row(str(a["nodes"]), str(a["local"]["lockstep"]), f"{a['local']['episodes_per_min']:.1f}",
                  f"{a['ray']['episodes_per_min']:.1f}", f"{a['ray_over_local']:.2f}x",
                  f"{a['ray']['driver_cpu_per_episode_ms']:.1f}")
    console.print(t)
    p = r["projection"]
    console.print(f"driver CPU per episode: {p['driver_cpu_per_episode_ms']:.1f} ms in a first run (new tasks' "
                  f"trees shipped); {p['driver_cpu_per_episode_steady_ms']:.1f} ms steady (trees on the nodes, less "
                  f"Ray's idle threads: {100 * p['driver_idle_cpu']:.1f}% of a core) = "
                  f"{p['driver_cpu_per_turn_ms']:.2f} ms per turn x {p['turns_per_episode']} turns + "
                  f"{p['driver_cpu_per_episode_fixed_ms']:.1f} ms fixed; +{p['driver_cpu_per_new_task_ms']:.1f} ms per "
                  f"new task: at most {p['driver_episodes_per_s']} episodes/s", markup=False)
    for name, label in (("gym", "gym suite"), ("check_10s", "10 s checks")):
        q = p[name]
        console.print(f"{label}: an episode holds a slot {q['slot_seconds_per_episode']:.2f} s -> one driver keeps "
                      f"{q['slots_one_driver_keeps_busy']:.0f} slots busy ({q['nodes_of_8_slots']:.1f} nodes of "
                      f"8 slots; {q['slots_every_episode_a_new_task']:.0f} slots if every episode is a new task); "
                      "beyond that the driver is the bottleneck", markup=False)

"""fixrl bench rollout: episodes/min and generated tokens/s of the agent loop on the tiny
checkpoint, all episodes in lockstep (one batched generate per turn) against one episode at a
time, measured in the same run on the same tasks, each arm `--repeats` times (interleaved; each
arm's fastest run is reported, and every run's seconds are in the JSON).

The tiny checkpoint has random weights, so its replies are not tool calls: every turn runs to
max_new_tokens and comes back as a Malformed observation, and an episode lasts until the env's
malformed limit (or max turns). Both arms therefore do the same work per episode: the same
number of turns of the same length, and the same hidden check at the end.

Figures: episodes/min and tokens/s over the whole run (generation, env steps and the hidden
checks), and generation-only tokens/s (time inside `policy.generate`). The hidden checks
(one pytest run per episode, forked from an interpreter that keeps pytest imported: see
sandbox.forking) can only be spread over the machine's cores, so on a machine of few cores they
bound the end-to-end gain; the generation-only ratio is the batching itself. Not guaranteed: the
tiny checkpoint's random replies stand in for a model's, so the figures are the loop's and the
sandboxes' costs, not a trained model's episode lengths.
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.table import Table

from fixrl import tasks as tasks_pkg
from fixrl.envs import EnvConfig
from fixrl.harness.agent.local_rollouts import LocalRollouts
from fixrl.harness.agent.policies import TimedPolicy
from fixrl.harness.bench.errors import BenchError
from fixrl.harness.model.tiny import cache_dir, init_tiny, make_tiny_suite
from fixrl.sandbox import SandboxConfig
from fixrl.tasks.check.run import PRELUDE


@dataclass
class Config:
    """`fixrl bench rollout`."""

    model: str | None = None
    """Checkpoint directory (None: the tiny one, made in the cache)."""
    suite: str | None = None
    """Suite directory (None: a tiny three-task suite in a temporary directory)."""
    episodes: int = 30
    """Episodes per arm."""
    batch: int = 30
    """Episodes in lockstep in the batched arm."""
    max_new_tokens: int = 64
    """Tokens per turn."""
    turns: int = 3
    """Turns per episode."""
    cpu_threads: int | None = None
    """Torch threads while generating on a CPU (None: the cores free at each call)."""
    backend: Literal["local", "docker"] = "local"
    """Sandbox backend of both arms."""
    seed: int = 0
    """Seed of both arms' episodes."""
    repeats: int = 3
    """Runs of each arm, interleaved; each arm's fastest is reported (not with --ray: run it again)."""
    ray: str | None = None
    """Measure the environment side on a Ray cluster instead (scripted episodes on the gym
    suite): `local` (`ray start` processes on this machine, torn down after), `auto` or HOST:PORT."""
    nodes: int = 3
    """With --ray: the most worker nodes measured (1, 2, ... up to this many)."""
    slots: int = 2
    """With --ray local: the sandbox slots of each worker node."""
    calls: int = 200
    """With --ray: tool calls per arm of the latency test."""
    engine: Literal["hf", "vllm"] = "hf"
    """vllm: vLLM async episodes against hf lockstep, with checks as they are and slowed
    (harness/bench/rollout_vllm.py); hf: lockstep against one at a time."""
    vllm_url: str | None = None
    """With --engine vllm: a running server for --model (unset: one is started and stopped)."""
    vllm_python: str = ".vllm-venv/bin/python"
    """With --engine vllm: the vLLM venv's interpreter (`make vllm`)."""
    slow_check: float = 1.0
    """With --engine vllm: seconds each hidden check sleeps in the second row."""

    def validate(self) -> None:
        if min(self.episodes, self.batch, self.turns, self.max_new_tokens, self.repeats) < 1:
            raise BenchError("bench rollout: episodes, batch, turns, max_new_tokens and repeats must be >= 1")


def _arm(policy, suite, tasks, n_per_task: int, pool_size: int, turns: int, backend: str, seed: int,
         scratch) -> dict:
    """One arm, timed from the first episode to the last check. The sandbox pool, and its
    check sandboxes with pytest imported, are started before the clock starts: a training run
    keeps one pool for all its steps, so start-up is not part of the loop's throughput
    (`fixrl bench sandbox` measures it)."""
    config = EnvConfig(max_turns=turns, max_malformed=turns)
    timed = TimedPolicy(policy)
    reused = getattr(policy, "reused_tokens", 0)
    with LocalRollouts(suite, config, SandboxConfig(backend=backend, pool_size=pool_size)) as rollouts:
        rollouts.warm(scratch, check_prelude=PRELUDE)
        t0 = time.perf_counter()
        trajs = rollouts.run(timed, tasks, n_per_task, seed)
        seconds = time.perf_counter() - t0
    tokens = sum(t.num_policy_tokens for t in trajs)
    return {
        "episodes": len(trajs),
        "lockstep": pool_size,
        "seconds": round(seconds, 2),
        "episodes_per_min": round(len(trajs) / seconds * 60, 2),
        "tokens": tokens,
        "tokens_per_s": round(tokens / seconds, 1),
        "generate_seconds": round(timed.seconds, 2),
        "generation_tokens_per_s": round(tokens / max(timed.seconds, 1e-9), 1),
        "turns": sum(t.info.turns for t in trajs),
        "errors": sum(t.errored for t in trajs),
        "check_seconds": round(sum(t.info.seconds.get("check", 0.0) for t in trajs), 2),
        "prompt_tokens_from_cache": getattr(policy, "reused_tokens", 0) - reused,
    }


def measure(cfg: Config) -> dict[str, Any]:
    """Both arms, each `cfg.repeats` times interleaved; the fastest run of each and the ratios."""
    if cfg.ray:
        return _ray_bench().measure(cfg)
    if cfg.engine == "vllm":
        return _vllm_bench().measure(cfg)
    from fixrl.harness.agent.policies.hf import HFPolicy  # noqa: PLC0415 - torch and transformers, only when the bench runs

    cfg.validate()
    with tempfile.TemporaryDirectory(prefix="fixrl-bench-rollout-") as tmp:
        model = Path(cfg.model) if cfg.model else cache_dir() / "tiny-qwen2"
        if not cfg.model and not (model / "config.json").exists():
            init_tiny(model)
        suite = tasks_pkg.load_suite(Path(cfg.suite) if cfg.suite else make_tiny_suite(Path(tmp) / "suite"))
        tasks = [t for t in suite.tasks if t.kind == "fix"][: max(1, min(len(suite.tasks), 3))]
        n_per_task = max(1, cfg.episodes // len(tasks))
        try:
            policy = HFPolicy(model, temperature=1.0, max_new_tokens=cfg.max_new_tokens, cpu_threads=cfg.cpu_threads)
        except (OSError, ValueError) as e:
            raise BenchError(f"bench rollout: --model {model}: {e}") from None
        scratch = Path(tmp) / "empty"
        scratch.mkdir()
        # Warm-up (first-call allocations, lazy imports) outside the timed arms.
        _arm(policy, suite, tasks[:1], 1, 1, 1, cfg.backend, cfg.seed, scratch)
        # Interleaved, fastest of each: on a shared machine a neighbour's burst lands on one
        # run of one arm; the minimum is each arm's least disturbed run (timeit's rule).
        ones, batches = [], []
        for _ in range(cfg.repeats):
            ones.append(_arm(policy, suite, tasks, n_per_task, 1, cfg.turns, cfg.backend, cfg.seed, scratch))
            batches.append(_arm(policy, suite, tasks, n_per_task, min(cfg.batch, n_per_task * len(tasks)),
                                cfg.turns, cfg.backend, cfg.seed, scratch))
    one, batched = min(ones, key=lambda r: r["seconds"]), min(batches, key=lambda r: r["seconds"])
    one["all_seconds"] = [r["seconds"] for r in ones]
    batched["all_seconds"] = [r["seconds"] for r in batches]
    return {
        "model": str(model), "device": str(policy.device),
        "torch_threads_generating": (policy.cpu_threads or "auto (free cores)")
        if policy.device.type == "cpu" else None,
        "cpus": os.cpu_count(), "max_new_tokens": cfg.max_new_tokens, "turns_per_episode": cfg.turns,
        "backend": cfg.backend, "repeats": cfg.repeats, "one_at_a_time": one, "batched": batched,
        "speedup_episodes_per_min": round(batched["episodes_per_min"] / one["episodes_per_min"], 2),
        "speedup_tokens_per_s": round(batched["tokens_per_s"] / one["tokens_per_s"], 2),
        "speedup_generation_tokens_per_s": round(batched["generation_tokens_per_s"]
                                                 / one["generation_tokens_per_s"], 2),
    }


def show(result: dict[str, Any], console: Any) -> None:
    """The two arms and their ratios as a table (or the cluster benchmark's, harness/bench/ray.py)."""
    if "tool_call" in result:
        return _ray_bench().show(result, console)
    if result.get("engine") == "vllm":
        return _vllm_bench().show(result, console)

    table = Table(title=f"agent loop on {Path(result['model']).name}, fastest of {result['repeats']} runs per arm "
                        f"({result['device']}, {result['cpus']} CPUs, "
                        f"{result['torch_threads_generating']} torch thread(s) generating, "
                        f"{result['max_new_tokens']} tokens x {result['turns_per_episode']} turns per episode, "
                        f"{result['backend']} sandboxes)")
    for col in ("", "episodes", "lockstep", "seconds", "episodes/min", "tokens/s", "generation tokens/s"):
        table.add_column(col, justify="right")
    for name, r in (("one at a time", result["one_at_a_time"]), ("batched", result["batched"])):
        table.add_row(name, str(r["episodes"]), str(r["lockstep"]), f"{r['seconds']:.1f}",
                      f"{r['episodes_per_min']:.1f}", f"{r['tokens_per_s']:.0f}",
                      f"{r['generation_tokens_per_s']:.0f}")
    table.add_row("speed-up", "", "", "", f"{result['speedup_episodes_per_min']:.2f}x",
                  f"{result['speedup_tokens_per_s']:.2f}x", f"{result['speedup_generation_tokens_per_s']:.2f}x")
    console.print(table)


def _ray_bench() -> Any:
    """The `--ray` arm's module, imported only for that arm: a run without `--ray` (and the
    command line that registers this bench) must not import the cluster modules."""
    from fixrl.harness.bench import ray  # noqa: PLC0415 - the cluster modules, only with --ray

    return ray


def _vllm_bench() -> Any:
    """The `--engine vllm` arms' module, imported only for them."""
    from fixrl.harness.bench import rollout_vllm  # noqa: PLC0415 - the vLLM engine, only with --engine vllm

    return rollout_vllm

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
sandbox.forking) can only be spread over the machine's cores, so on 2 cores they bound the
end-to-end gain; the generation-only ratio is the batching itself.
"""
from __future__ import annotations

import json
import time


def add_arguments(parser) -> None:
    parser.add_argument("--model", help="checkpoint directory (default: the tiny one, made in the cache)")
    parser.add_argument("--suite", help="suite directory (default: a tiny three-task suite in a temp dir)")
    parser.add_argument("--episodes", type=int, default=30, help="episodes per arm (default 30)")
    parser.add_argument("--batch", type=int, default=30, help="episodes in lockstep in the batched arm (default 30)")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="tokens per turn (default 64)")
    parser.add_argument("--turns", type=int, default=3, help="turns per episode (default 3)")
    parser.add_argument("--cpu-threads", type=int, help="torch threads while generating on a CPU (default: the cores free at each call)")
    parser.add_argument("--backend", default="local", choices=["local", "docker"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each arm, interleaved; each arm's fastest is reported (default 3)")
    from fixrl.harness.agent import bench_ray

    bench_ray.add_arguments(parser)


def _arm(policy, suite, tasks, n_per_task: int, pool_size: int, turns: int, backend: str, seed: int,
         scratch) -> dict:
    """One arm, timed from the first episode to the last check. The sandbox pool, and its
    check sandboxes with pytest imported, are started before the clock starts: a training run
    keeps one pool for all its steps, so start-up is not part of the loop's throughput
    (`fixrl bench sandbox` measures it)."""
    from fixrl.envs import EnvConfig
    from fixrl.harness.agent.local import LocalRollouts
    from fixrl.harness.agent.policies import TimedPolicy
    from fixrl.sandbox import SandboxConfig
    from fixrl.tasks.check import PRELUDE

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


def run(args) -> int:
    if getattr(args, "ray", None):
        from fixrl.harness.agent import bench_ray  # the cluster benchmark (Ray imported there)

        return bench_ray.run(args)
    import os
    import tempfile
    from pathlib import Path

    from fixrl import tasks as tasks_pkg
    from fixrl.harness.cli import UserError
    from fixrl.harness.agent.policies.hf import HFPolicy
    from fixrl.harness.agent.tiny import cache_dir, init_tiny, make_tiny_suite

    if min(args.episodes, args.batch, args.turns, args.max_new_tokens, args.repeats) < 1:
        raise UserError("--episodes, --batch, --turns, --max-new-tokens and --repeats must be >= 1")
    with tempfile.TemporaryDirectory(prefix="fixrl-bench-rollout-") as tmp:
        if args.model:
            model = Path(args.model)
        else:
            model = cache_dir() / "tiny-qwen2"
            if not (model / "config.json").exists():
                init_tiny(model)
        suite_dir = Path(args.suite) if args.suite else make_tiny_suite(Path(tmp) / "suite")
        try:
            suite = tasks_pkg.load_suite(suite_dir)
        except ValueError as e:
            raise UserError(f"--suite {suite_dir}: {e}") from None
        tasks = [t for t in suite.tasks if t.kind == "fix"][: max(1, min(len(suite.tasks), 3))]
        n_per_task = max(1, args.episodes // len(tasks))
        try:
            policy = HFPolicy(model, temperature=1.0, max_new_tokens=args.max_new_tokens,
                              cpu_threads=args.cpu_threads)
        except (OSError, ValueError) as e:
            raise UserError(f"--model {model}: {e}") from None
        scratch = Path(tmp) / "empty"
        scratch.mkdir()
        # Warm-up (first-call allocations, lazy imports) outside the timed arms.
        _arm(policy, suite, tasks[:1], 1, 1, 1, args.backend, args.seed, scratch)
        # Interleaved, fastest of each: on a shared machine a neighbour's burst lands on one
        # run of one arm; the minimum is each arm's least disturbed run (timeit's rule).
        ones, batches = [], []
        for _ in range(args.repeats):
            ones.append(_arm(policy, suite, tasks, n_per_task, 1, args.turns, args.backend, args.seed, scratch))
            batches.append(_arm(policy, suite, tasks, n_per_task, min(args.batch, n_per_task * len(tasks)),
                                args.turns, args.backend, args.seed, scratch))
        one = min(ones, key=lambda r: r["seconds"])
        batched = min(batches, key=lambda r: r["seconds"])
        one["all_seconds"] = [r["seconds"] for r in ones]
        batched["all_seconds"] = [r["seconds"] for r in batches]
    result = {
        "model": str(model),
        "device": str(policy.device),
        "torch_threads_generating": (policy.cpu_threads or "auto (free cores)") if policy.device.type == "cpu" else None,
        "cpus": os.cpu_count(),
        "max_new_tokens": args.max_new_tokens,
        "turns_per_episode": args.turns,
        "backend": args.backend,
        "repeats": args.repeats,
        "one_at_a_time": one,
        "batched": batched,
        "speedup_episodes_per_min": round(batched["episodes_per_min"] / one["episodes_per_min"], 2),
        "speedup_tokens_per_s": round(batched["tokens_per_s"] / one["tokens_per_s"], 2),
        "speedup_generation_tokens_per_s": round(batched["generation_tokens_per_s"]
                                                 / one["generation_tokens_per_s"], 2),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"agent loop on {Path(str(model)).name}, fastest of {args.repeats} runs per arm "
                        f"({result['device']}, {result['cpus']} CPUs, "
                        f"{result['torch_threads_generating']} torch thread(s) generating, "
                        f"{args.max_new_tokens} tokens x {args.turns} turns per episode, {args.backend} sandboxes)")
    for col in ("", "episodes", "lockstep", "seconds", "episodes/min", "tokens/s", "generation tokens/s"):
        table.add_column(col, justify="right")
    for name, r in (("one at a time", one), ("batched", batched)):
        table.add_row(name, str(r["episodes"]), str(r["lockstep"]), f"{r['seconds']:.1f}",
                      f"{r['episodes_per_min']:.1f}", f"{r['tokens_per_s']:.0f}",
                      f"{r['generation_tokens_per_s']:.0f}")
    table.add_row("speed-up", "", "", "", f"{result['speedup_episodes_per_min']:.2f}x",
                  f"{result['speedup_tokens_per_s']:.2f}x", f"{result['speedup_generation_tokens_per_s']:.2f}x")
    Console().print(table)
    return 0

"""fixrl bench rollout --engine vllm: the agent loop on a vLLM server (episodes that never wait
for each other) against `hf` lockstep generation, same tasks, model and seed, in the same run;
a second row with every hidden check slowed by `--slow-check` seconds.

Both arms use the head-size-32 tiny checkpoint (vLLM's CPU attention needs >= 32) and one
sandbox pool of `--batch` sandboxes for `--episodes` episodes, so episodes start as sandboxes
free up. Figures per arm: episodes/min and generated tokens/s over the whole run, and the tool
share: the seconds episodes spent in their environment (start, tool calls, the check) over
those plus the seconds spent waiting for generation (summed per request for vLLM, whose
requests overlap; wall time of each batched call for hf).

Not guaranteed: the tiny checkpoint's random replies are not tool calls, so its episodes make no
slow tool calls; a slowed check then costs lockstep only through the sandboxes it holds (the next
episodes start later), which understates what a trained model's slow `test` calls cost
lockstep. The server's own start-up (one to two minutes) is outside the clock, as the pool's is.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from fixrl import tasks as tasks_pkg
from fixrl.envs import EnvConfig
from fixrl.harness.agent.local_rollouts import LocalRollouts
from fixrl.harness.agent.policies import TimedPolicy
from fixrl.harness.bench.errors import BenchError
from fixrl.harness.model.tiny import cache_dir, init_tiny, make_tiny_suite
from fixrl.sandbox import SandboxConfig
from fixrl.tasks.check.run import PRELUDE

TINY32 = "tiny-qwen2-head32"
"""The cached head-size-32 tiny checkpoint (the same one the tests use)."""


def _slow_suite(dest: Path, delay: float) -> Path:
    """The tiny suite with each hidden check sleeping `delay` seconds when it is imported."""
    make_tiny_suite(dest)
    if delay > 0:
        for check in (dest / "checks").glob("test_*.py"):
            check.write_text(check.read_text() + f"\n\nimport time\n\ntime.sleep({delay!r})\n")
    return dest


def _arm(policy: Any, suite: Any, n_per_task: int, pool_size: int, turns: int, backend: str, seed: int,
         scratch: Path) -> dict[str, Any]:
    tasks = [t for t in suite.tasks if t.kind == "fix"]
    config = EnvConfig(max_turns=turns, max_malformed=turns)
    timed = TimedPolicy(policy)
    with LocalRollouts(suite, config, SandboxConfig(backend=backend, pool_size=pool_size)) as rollouts:
        rollouts.warm(scratch, check_prelude=PRELUDE)
        t0 = time.perf_counter()
        trajs = rollouts.run(timed, tasks, n_per_task, seed)
        seconds = time.perf_counter() - t0
    tokens = sum(t.num_policy_tokens for t in trajs)
    env_seconds = sum(sum(t.info.seconds.get(k, 0.0) for k in ("start", "tools", "check")) for t in trajs)
    return {
        "episodes": len(trajs), "pool": pool_size, "seconds": round(seconds, 2),
        "episodes_per_min": round(len(trajs) / seconds * 60, 2), "tokens": tokens,
        "tokens_per_s": round(tokens / seconds, 1), "generate_seconds": round(timed.seconds, 2),
        "env_seconds": round(env_seconds, 2),
        "tool_share": round(env_seconds / max(env_seconds + timed.seconds, 1e-9), 3),
        "errors": sum(t.errored for t in trajs),
    }


def measure(cfg: Any) -> dict[str, Any]:
    """hf lockstep and vLLM async, with the checks as they are and slowed; ratios per row."""
    # torch/transformers and the server, only when this bench runs.
    from fixrl.harness.agent.policies.hf import HFPolicy  # noqa: PLC0415 - torch, only when the bench runs
    from fixrl.harness.agent.policies.vllm import VLLMPolicy  # noqa: PLC0415 - transformers, only when the bench runs
    from fixrl.harness.agent.policies.vllm_server import ServerSpec, VLLMServerError  # noqa: PLC0415 - with the policy

    cfg.validate()
    model = Path(cfg.model) if cfg.model else cache_dir() / TINY32
    if not cfg.model and not (model / "config.json").exists():
        init_tiny(model, head_dim=32)
    try:
        vllm = VLLMPolicy(model, url=cfg.vllm_url, spec=ServerSpec(model=str(model), python=cfg.vllm_python),
                          temperature=1.0, max_new_tokens=cfg.max_new_tokens)
    except (VLLMServerError, OSError, ValueError) as e:
        raise BenchError(f"bench rollout --engine vllm: {e}") from None
    rows = []
    try:
        hf = HFPolicy(model, temperature=1.0, max_new_tokens=cfg.max_new_tokens, cpu_threads=cfg.cpu_threads)
        with tempfile.TemporaryDirectory(prefix="fixrl-bench-vllm-") as tmp:
            scratch = Path(tmp) / "empty"
            scratch.mkdir()
            for delay in (0.0, cfg.slow_check):
                suite = tasks_pkg.load_suite(_slow_suite(Path(tmp) / f"suite-{delay}", delay))
                n_per_task = max(1, cfg.episodes // sum(t.kind == "fix" for t in suite.tasks))
                pool = min(cfg.batch, n_per_task * len(suite.tasks))
                # Warm-up of both engines (first-call allocations) outside the timed arms.
                for policy in (hf, vllm):
                    _arm(policy, suite, 1, 1, 1, cfg.backend, cfg.seed, scratch)
                best: dict[str, dict[str, Any]] = {}
                for _ in range(cfg.repeats):
                    for name, policy in (("hf_lockstep", hf), ("vllm_async", vllm)):
                        r = _arm(policy, suite, n_per_task, pool, cfg.turns, cfg.backend, cfg.seed, scratch)
                        if name not in best or r["seconds"] < best[name]["seconds"]:
                            best[name] = r
                rows.append({"check_delay_s": delay, **best,
                             "speedup_episodes_per_min": round(best["vllm_async"]["episodes_per_min"]
                                                               / best["hf_lockstep"]["episodes_per_min"], 2),
                             "speedup_tokens_per_s": round(best["vllm_async"]["tokens_per_s"]
                                                           / best["hf_lockstep"]["tokens_per_s"], 2)})
    finally:
        vllm.close()
    return {"engine": "vllm", "model": str(model), "cpus": os.cpu_count(), "max_new_tokens": cfg.max_new_tokens,
            "turns_per_episode": cfg.turns, "backend": cfg.backend, "repeats": cfg.repeats, "rows": rows}


def show(result: dict[str, Any], console: Any) -> None:
    table = Table(title=f"agent loop on {Path(result['model']).name}: vLLM async vs hf lockstep, fastest of "
                        f"{result['repeats']} run(s) per arm ({result['cpus']} CPUs, {result['max_new_tokens']} "
                        f"tokens x {result['turns_per_episode']} turns per episode, {result['backend']} sandboxes)")
    for col in ("check delay", "arm", "episodes", "pool", "seconds", "episodes/min", "tokens/s", "tool share"):
        table.add_column(col, justify="right")
    for row in result["rows"]:
        for name in ("hf_lockstep", "vllm_async"):
            r = row[name]
            table.add_row(f"{row['check_delay_s']:.1f} s", name, str(r["episodes"]), str(r["pool"]),
                          f"{r['seconds']:.1f}", f"{r['episodes_per_min']:.1f}", f"{r['tokens_per_s']:.0f}",
                          f"{r['tool_share']:.2f}")
        table.add_row("", "vllm / hf", "", "", "", f"{row['speedup_episodes_per_min']:.2f}x",
                      f"{row['speedup_tokens_per_s']:.2f}x", "")
    console.print(table)

"""fixrl bench sandbox | rollout | logprobs | grpo-step | gpu: speed and memory as ratios against a
baseline measured in the same run (these machines are shared and noisy), and the prepared GPU check."""
from __future__ import annotations

import importlib

# subcommand -> (module, function, help); each module defines `add_arguments(parser)` and
# `run(args) -> int` and is imported only when its benchmark runs.
BENCHES = {
    "sandbox": ("fixrl.sandbox.bench", "tool-call latency, reset and start-up against plain `docker exec`"),
    "rollout": ("fixrl.harness.bench_rollout", "episodes/min and tokens/s, batched against one at a time"),
    "logprobs": ("fixrl.train.bench_logprobs", "peak memory and time of reply log-probs against naive paths"),
    "grpo-step": ("fixrl.train.bench_grpo", "one whole GRPO update at Qwen2.5 sizes on the CPU, and the memory model"),
    "gpu": ("fixrl.train.bench_gpu", "the T4 check: fp16 GRPO updates at 0.5B/1.5B/3B under a 15 GB cap (CUDA)"),
}


def register(sub) -> None:
    bench = sub.add_parser("bench", help="benchmarks (ratios against an in-run baseline)")
    bench_sub = bench.add_subparsers(dest="bench", metavar="BENCH", required=True)
    for name, (module_name, help_text) in BENCHES.items():
        p = bench_sub.add_parser(name, help=help_text)
        p.add_argument("--json", action="store_true", help="print the figures as JSON")
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            module = None
        if module is not None and hasattr(module, "add_arguments"):
            module.add_arguments(p)
        p.set_defaults(func=lambda args, m=module_name: _run(m, args))


def _run(module_name: str, args) -> int:
    from fixrl.harness.cli import UserError
    from fixrl.train.bench_proc import BenchError

    try:
        return importlib.import_module(module_name).run(args)
    except BenchError as e:
        raise UserError(str(e)) from None

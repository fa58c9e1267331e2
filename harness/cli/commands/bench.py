"""fixrl bench sandbox | rollout | logprobs: speed and memory as ratios against a baseline
measured in the same run (these machines are shared and noisy)."""
from __future__ import annotations

import importlib

# subcommand -> (module, function, help); each module defines `add_arguments(parser)` and
# `run(args) -> int` and is imported only when its benchmark runs.
BENCHES = {
    "sandbox": ("fixrl.sandbox.bench", "tool-call latency, reset and start-up against plain `docker exec`"),
    "rollout": ("fixrl.harness.agent.bench_rollout", "episodes/min and tokens/s, batched against one at a time"),
    "logprobs": ("fixrl.train.bench_logprobs", "peak memory and time of reply log-probs against naive paths"),
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
        p.set_defaults(func=lambda args, m=module_name: importlib.import_module(m).run(args))

"""fixrl bench sandbox | rollout | check | generate | repos | logprobs | grpo-step | gpu | view: speed and memory
as ratios against a baseline measured in the same run (these machines are shared and noisy), the prepared GPU
check, and the conformance table over real libraries (`repos`)."""
from __future__ import annotations

import argparse
import json

from fixrl.harness.agent.transcript import make_console
from fixrl.harness.bench import check, generate, gpu, grpo_step, logprobs, repos, rollout, sandbox, view
from fixrl.harness.cli.flags import add_config_flags, given_fields

# subcommand -> (module, help). Each module defines a `Config` dataclass (its flags),
# `measure(cfg) -> dict` and `show(result, console)`; the parser reads its Config, and only what
# `measure` needs beyond that (torch, docker) is imported inside it.
BENCHES = {
    "sandbox": (sandbox, "tool-call latency, reset and start-up against plain `docker exec`"),
    "rollout": (rollout, "episodes/min and tokens/s, batched against one at a time"),
    "check": (check, "seconds per hidden check with the runtime guard against without it"),
    "logprobs": (logprobs, "peak memory and time of reply log-probs against naive paths"),
    "grpo-step": (grpo_step, "one whole GRPO update at Qwen2.5 sizes on the CPU, and the memory model"),
    "gpu": (gpu, "the T4 check: fp16 GRPO updates at 0.5B/1.5B/3B under a 15 GB cap (CUDA)"),
    "generate": (generate, "generator candidates/min: covering tests against the whole suite"),
    "view": (view, "`fixrl view` on 10,000 episodes: seconds to write and to open, against 100 episodes"),
    "repos": (repos, "the conformance table: released libraries generated, validated, oracle and blind"),
}


def register(sub) -> None:
    bench = sub.add_parser("bench", help="benchmarks (ratios against an in-run baseline)")
    bench_sub = bench.add_subparsers(dest="bench", metavar="BENCH", required=True)
    for name, (module, help_text) in BENCHES.items():
        p = bench_sub.add_parser(name, help=help_text, description=module.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--json", action="store_true", help="print the figures as JSON")
        add_config_flags(p, module.Config)
        p.set_defaults(func=lambda args, m=module: _run(m, args))


def _run(module, args: argparse.Namespace) -> int:
    cfg = module.Config(**given_fields(args, module.Config))
    result = module.measure(cfg)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        module.show(result, make_console())
    return 0

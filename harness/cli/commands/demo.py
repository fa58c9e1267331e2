"""fixrl demo: SFT -> probe -> GRPO -> held-out evaluation of a tiny agent, on any laptop."""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from fixrl.harness.cli.errors import UserError
from fixrl.harness.cli.flags import add_config_flags, config_fields, given_fields
from fixrl.harness.demo.config import DemoConfig, demo_grpo
from fixrl.train.resolve import DEFAULT_PRESET

# The demo's own fields get flags; of the nested configs, only these (under their usual names).
_NESTED_FLAGS = {"--sandbox": ("sandbox", "backend"), "--ray": ("cluster", "address"), "--steps": ("grpo", "max_steps")}


def register(sub) -> None:
    p = sub.add_parser("demo", help="train a tiny agent end to end (SFT, probe, GRPO, eval) on the built-in suite")
    add_config_flags(p, DemoConfig, skip=_nested_fields(DemoConfig), title="DemoConfig")
    p.add_argument("--sandbox", choices=["local", "docker"], default=None,
                   help="sandbox backend of every stage (default local: no Docker daemon needed)")
    p.add_argument("--ray", default=None, metavar="auto|ADDRESS",
                   help="every stage's sandboxes on this Ray cluster (its nodes' fixrl_sandbox slots)")
    p.add_argument("--steps", type=int, default=None, help="GRPO steps (default 20; 2 with --quick)")
    p.add_argument("--preset", default=DEFAULT_PRESET, help=f"GRPO preset (default {DEFAULT_PRESET})")
    p.set_defaults(func=_run)


def _nested_fields(cls) -> tuple[str, ...]:
    return tuple(f.dotted for f in config_fields(cls) if "." in f.dotted)


def _run(args: argparse.Namespace) -> int:
    from fixrl.harness.demo.recipe import run_demo  # noqa: PLC0415 - the recipe imports torch and transformers

    fields = {k: v for k, v in given_fields(args, DemoConfig).items() if "." not in k}
    if fields.get("path_copies", 0) < 0:
        raise UserError(f"--path-copies {fields['path_copies']}: give 0 or more")
    if args.steps is not None and args.steps < 1:
        raise UserError(f"--steps {args.steps}: give at least 1 step")
    if fields.get("suite") is not None and not Path(fields["suite"]).is_dir():
        raise UserError(f"--suite {fields['suite']}: no such directory")
    cfg = DemoConfig(**fields, grpo=demo_grpo(args.preset))
    if args.sandbox is not None:
        cfg = dataclasses.replace(cfg, sandbox=dataclasses.replace(cfg.sandbox, backend=args.sandbox))
    if args.ray is not None:
        cfg = dataclasses.replace(cfg, cluster=dataclasses.replace(cfg.cluster, address=args.ray))
    if args.steps is not None:
        cfg.grpo = cfg.grpo.updated(max_steps=args.steps)
    run_demo(cfg)
    return 0

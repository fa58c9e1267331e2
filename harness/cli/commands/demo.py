"""fixrl demo: SFT -> probe -> GRPO -> held-out evaluation of a tiny agent, on any laptop."""
from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("demo", help="train a tiny agent end to end (SFT, probe, GRPO, eval) on the built-in suite")
    p.add_argument("--out", default="runs/demo", help="output directory (reused to resume; default runs/demo)")
    p.add_argument("--suite", default=None, help="suite directory (default: the built-in gym suite)")
    p.add_argument("--sandbox", choices=["local", "docker"], default="local",
                   help="sandbox backend (default local: no Docker daemon needed)")
    p.add_argument("--ray", metavar="auto|ADDRESS", help="run the episodes' sandboxes on a Ray cluster")
    p.add_argument("--preset", default="octlm", help="GRPO preset (default octlm)")
    p.add_argument("--quick", action="store_true", help="every stage in a few minutes, fewer steps")
    p.add_argument("--steps", type=int, default=None, help="GRPO steps (default 20; 2 with --quick)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--path-copies", type=int, default=None,
                   help="path excerpts per demonstration in the first and last SFT stage (default 1; 0: none; "
                        "see DemoConfig.path_copies)")
    p.add_argument("--informed-tests", action="store_true",
                   help="informed demonstrations call `test` before `submit` (default: read, edit, submit; "
                        "see DemoConfig.informed_tests)")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from fixrl.harness.cli import UserError
    from fixrl.harness.demo.recipe import DemoConfig, run_demo

    if args.path_copies is not None and args.path_copies < 0:
        raise UserError(f"--path-copies {args.path_copies}: give 0 or more")
    extra = {} if args.path_copies is None else {"path_copies": args.path_copies}
    if args.informed_tests:
        extra["informed_tests"] = True
    cfg = DemoConfig(out=args.out, suite=args.suite, sandbox=args.sandbox, ray=args.ray, preset=args.preset,
                     quick=args.quick, seed=args.seed, **extra)
    if args.steps is not None:
        if args.steps < 1:
            raise UserError(f"--steps {args.steps}: give at least 1 step")
        cfg.grpo_steps = args.steps
    if args.suite is not None:
        from pathlib import Path

        if not Path(args.suite).is_dir():
            raise UserError(f"--suite {args.suite}: no such directory")
    run_demo(cfg)
    return 0

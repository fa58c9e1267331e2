"""The `fixrl` command line. Each command group lives in harness/cli/commands/<name>.py and
exposes `register(subparsers)`; heavy imports happen inside the command functions."""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import warnings

from fixrl.harness.cli.errors import UserError, describe

__all__ = ["UserError", "build_parser", "main", "quiet_third_parties"]

COMMAND_MODULES = [
    "sandbox",   # fixrl sandbox build-image | cleanup
    "tasks",     # fixrl tasks validate | new | generate | import-swebench | export-swebench
    "rollout",   # fixrl rollout
    "init_tiny", # fixrl init-tiny
    "train",     # fixrl sft | grpo
    "evals",     # fixrl eval | probe | report
    "bench",     # fixrl bench sandbox | rollout | logprobs
    "demo",      # fixrl demo
    "view",      # fixrl view
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fixrl", description="Train and evaluate coding agents with RL.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"fixrl.harness.cli.commands.{name}")
        module.register(sub)
    return parser


def quiet_third_parties() -> None:
    """Keep the libraries' deprecation notices (transformers, peft, torch, ...) off the user's
    screen: they are about fixrl's code, not the user's input (`-v` shows them)."""
    for category in (DeprecationWarning, FutureWarning, PendingDeprecationWarning):
        warnings.filterwarnings("ignore", category=category)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    for name in ("transformers", "peft", "urllib3", "docker", "filelock"):
        logging.getLogger(name).setLevel(logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse has printed the usage and the error (or the help)
        return int(e.code or 0)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        quiet_third_parties()
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (Exception, KeyboardInterrupt) as e:
        said = describe(e)
        if said is None:
            raise
        print(said[0], file=sys.stderr)
        return said[1]


if __name__ == "__main__":
    sys.exit(main())

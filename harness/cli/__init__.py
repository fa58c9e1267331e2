"""The `fixrl` command line. Each command group lives in harness/cli/commands/<name>.py and
exposes `register(subparsers)`; heavy imports happen inside the command functions."""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

COMMAND_MODULES = [
    "sandbox",   # fixrl sandbox build-image | cleanup
    "tasks",     # fixrl tasks validate | new | generate | import-swebench | export-swebench
    "rollout",   # fixrl rollout
    "init_tiny", # fixrl init-tiny
    "train",     # fixrl sft | grpo
    "evals",     # fixrl eval | probe | report
    "bench",     # fixrl bench sandbox | rollout | logprobs
    "demo",      # fixrl demo
]


class UserError(Exception):
    """Bad input from the user: printed as one clear message, exit status 2, no traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fixrl", description="Train and evaluate coding agents with RL.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"fixrl.harness.cli.commands.{name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as e:
        print(f"fixrl: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fixrl: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

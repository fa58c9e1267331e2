"""The `fixrl` command line. Each command group lives in harness/cli/commands/<name>.py and
exposes `register(subparsers)`; heavy imports happen inside the command functions."""
from __future__ import annotations

import argparse
import difflib
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
    "env",       # fixrl env build | detect
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


def command_parser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The (sub)command's parser that `argv` names: `fixrl tasks validate ...` -> validate's."""
    for token in argv:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and token in subs[0].choices:
            parser = subs[0].choices[token]
    return parser


def unknown_message(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """`unrecognized arguments: --splt (did you mean --split?)`: the closest of the command's own
    flags for each unknown one."""
    flags = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    hints = []
    for token in unknown:
        name = token.split("=", 1)[0]
        if not name.startswith("-"):
            continue
        close = difflib.get_close_matches(name if name.startswith("--") else "-" + name, flags, n=2, cutoff=0.6)
        if close:
            hints.append(f"{name}: did you mean {' or '.join(close)}?")
    said = f"unrecognized arguments: {' '.join(unknown)}"
    if hints:
        return f"{said} ({'; '.join(hints)})"
    return f"{said} (`{parser.prog} --help` lists its flags)"


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
        args, unknown = parser.parse_known_args(argv)
        if unknown:   # said by the subcommand that was given them, with the flag meant when it is clear
            command = command_parser(parser, sys.argv[1:] if argv is None else argv)
            command.error(unknown_message(command, unknown))
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

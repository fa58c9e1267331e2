"""fixrl eval | probe | report: pass@k evaluations, paired comparisons, the GRPO signal probe and
plots. The flags are the fields of EvalConfig / ProbeConfig (their policy, env and sandbox
included); loading a model happens after every cheap check has passed."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from fixrl.evals.probe import ProbeConfig, run_probe_job
from fixrl.evals.report import report
from fixrl.evals.run import EvalConfig, EvalResult, compare, run_eval
from fixrl.harness.cli.errors import UserError
from fixrl.harness.cli.flags import add_config_flags, config_from_flags, merged

# Earlier spellings that stay accepted.
_ALIASES = {"tasks": ["--task"], "ks": ["-k"]}
# An evaluation is scored by the hidden check; the system prompt comes from a file (--system-prompt FILE).
_SKIP = ("episode.env.reward", "episode.env.system_prompt")


def register(sub) -> None:
    p = sub.add_parser("eval", help="pass@k of a model or scripted policy on a suite; "
                                    "--compare A B for a paired comparison")
    add_config_flags(p, EvalConfig, aliases={**_ALIASES, "n": ["-n"]}, skip=_SKIP)
    p.add_argument("--system-prompt", type=Path, metavar="FILE", dest="system_prompt_file",
                   help="system prompt file (the one the policy was trained with; default: built-in)")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("RUN_A", "RUN_B"),
                   help="compare two eval output directories instead of running")
    _output_flags(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("probe", help="will GRPO have signal? k attempts per task, predicted mixed groups")
    add_config_flags(p, ProbeConfig, aliases={"tasks": ["--task"], "k": ["-k"]},
                     skip=_SKIP)
    p.add_argument("--system-prompt", type=Path, metavar="FILE", dest="system_prompt_file",
                   help="system prompt file (the one GRPO will use; default: built-in)")
    _output_flags(p)
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("report", help="plots and a markdown summary of a training run "
                                      "(metrics.jsonl) or an eval (results.json)")
    p.add_argument("run", type=Path, metavar="RUN")
    p.add_argument("--out", type=Path, help="where to write (default: RUN/report)")
    p.set_defaults(func=cmd_report)


def _output_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _config(args: argparse.Namespace, cls: type):
    cfg = config_from_flags(args, cls)
    if args.system_prompt_file is not None:
        try:
            prompt = args.system_prompt_file.read_text()
        except OSError as e:
            raise UserError(f"--system-prompt {args.system_prompt_file}: cannot read it ({e.strerror})") from None
        cfg = merged(cfg, {"episode": {"env": {"system_prompt": prompt}}})
    return cfg


def cmd_eval(args: argparse.Namespace) -> int:
    if args.compare:
        if args.__dict__.get("episode.policy.model") or args.__dict__.get("episode.policy.policy"):
            raise UserError("--compare takes two eval output directories; drop --model/--policy")
        a, b = (EvalResult.load(p) for p in args.compare)
        cmp = compare(a, b, seed=args.seed or 0)
        print(json.dumps(cmp.to_dict(), indent=2) if args.json else cmp.to_text())
        return 0
    result = run_eval(_config(args, EvalConfig), progress=not args.no_progress and not args.json)
    if args.json:
        print(json.dumps(result.summary(), indent=2))
    else:
        print(result.to_markdown())
        if result.out:
            print(f"results written to {result.out}/")
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    res = run_probe_job(_config(args, ProbeConfig), progress=not args.no_progress and not args.json)
    print(json.dumps(res.to_dict(), indent=2) if args.json else res.to_text())
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    md = report(args.run, args.out)
    pngs = sorted(p.name for p in md.parent.glob("*.png"))
    print(f"wrote {md}" + (f" and {len(pngs)} plot(s): {', '.join(pngs)}" if pngs else ""))
    return 0

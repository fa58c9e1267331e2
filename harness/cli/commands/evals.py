"""fixrl eval | probe | report: pass@k evaluations, paired comparisons, the GRPO signal probe and
plots. Imports of evals.run / evals.report (torch, matplotlib via the agent loop) happen inside
the command functions so `fixrl --help` stays fast."""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def _ks(text: str) -> list[int]:
    try:
        ks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"-k {text!r}: expected comma-separated integers, "
                                         f"e.g. 1,4,8") from None
    if not ks:
        raise argparse.ArgumentTypeError("-k: give at least one k, e.g. 1,4,8")
    return ks


def _policy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", type=Path, help="checkpoint directory (transformers format)")
    p.add_argument("--adapter", type=Path, help="peft LoRA adapter directory (with --model)")
    p.add_argument("--policy", choices=("oracle", "blind", "random"),
                   help="a scripted policy instead of a model")
    p.add_argument("--suite", type=Path, help="suite directory (default: the built-in suite)")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help="tokens per assistant turn (model policies; default: the policy's)")
    p.add_argument("--backend", choices=("local", "docker"), default="local",
                   help="sandbox backend")
    p.add_argument("--pool-size", type=int, default=None, help="sandboxes used concurrently")
    p.add_argument("--ray", metavar="auto|ADDRESS", help="run the episodes' sandboxes on a Ray cluster")
    p.add_argument("--seed", type=int, default=0,
                   help="run seed; the same seed gives the same per-episode seeds (paired runs)")
    p.add_argument("--max-turns", type=int, default=None,
                   help="tool calls per episode (default: each task's limit)")
    p.add_argument("--max-edits", type=int, default=None,
                   help="applied edits per episode (default: each task's limit)")
    p.add_argument("--rename", action="store_true",
                   help="rename the buggy function per episode (as in training)")
    p.add_argument("--system-prompt", type=Path, metavar="FILE",
                   help="system prompt file (the one the policy was trained with; default: built-in)")
    p.add_argument("--no-tool-schemas", action="store_true",
                   help="leave the tools' JSON schemas out of the prompt (a tiny model trained without them)")
    p.add_argument("--task", action="append", dest="task_ids", metavar="ID",
                   help="only this task of the split (repeatable)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def register(sub) -> None:
    p = sub.add_parser("eval", help="pass@k of a model or scripted policy on a suite; "
                                    "--compare A B for a paired comparison")
    _policy_args(p)
    p.add_argument("--split", default="heldout", help="task split (default: heldout)")
    p.add_argument("-n", type=int, default=8, help="episodes per task")
    p.add_argument("-k", type=_ks, default=[1, 4, 8], help="comma-separated k values (<= n)")
    p.add_argument("--greedy", action="store_true", help="greedy decoding (temperature 0)")
    p.add_argument("--out", type=Path, help="output directory (results.json, results.md, "
                                            "trajectories.jsonl.gz)")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("RUN_A", "RUN_B"),
                   help="compare two eval output directories instead of running")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("probe", help="will GRPO have signal? k attempts per task, predicted "
                                     "mixed groups")
    _policy_args(p)
    p.add_argument("--split", default="train", help="task split (default: train)")
    p.add_argument("-k", type=int, default=4, help="attempts per task")
    p.add_argument("--group-size", type=int, default=6, help="GRPO group size G")
    p.add_argument("--tries", type=int, default=16, help="groups tried per step")
    p.add_argument("--mixed-groups", type=int, default=4, help="mixed groups needed per step")
    p.add_argument("--out", type=Path, help="also save the probe's episodes here")
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("report", help="plots and a markdown summary of a training run "
                                      "(metrics.jsonl) or an eval (results.json)")
    p.add_argument("run", type=Path, metavar="RUN")
    p.add_argument("--out", type=Path, help="where to write (default: RUN/report)")
    p.set_defaults(func=cmd_report)


def _suite(args) -> Path:
    if args.suite is not None:
        return args.suite
    try:
        from fixrl.tasks.suites import BUILTIN_SUITE
    except ImportError:
        from fixrl.harness.cli import UserError

        raise UserError("no built-in suite is installed here; pass --suite DIR") from None
    return BUILTIN_SUITE


def _env_config(args):
    from fixrl.envs import EnvConfig

    prompt = None
    if args.system_prompt is not None:
        try:
            prompt = args.system_prompt.read_text()
        except OSError as e:
            from fixrl.harness.cli import UserError

            raise UserError(f"--system-prompt {args.system_prompt}: cannot read it ({e.strerror})") from None
    return EnvConfig(max_turns=args.max_turns, max_edits=args.max_edits, rename=args.rename,
                     system_prompt=prompt, tool_schemas=not args.no_tool_schemas)


def _rollouts(args, suite, episodes: int):
    from fixrl.harness.agent.rollouts import open_rollouts
    from fixrl.sandbox import SandboxConfig

    sandbox = SandboxConfig(backend=args.backend, pool_size=args.pool_size or max(1, min(episodes, 8)), ray=args.ray)
    return open_rollouts(suite, _env_config(args), sandbox)


def _load_policy(args):
    from fixrl.harness.cli import UserError
    from fixrl.evals.run import EvalError, load_eval_policy

    sampling = {}
    if args.max_new_tokens is not None and args.model is not None:
        sampling["max_new_tokens"] = args.max_new_tokens
    try:
        return load_eval_policy(model=args.model, adapter=args.adapter, policy=args.policy,
                                temperature=args.temperature, greedy=getattr(args, "greedy", False),
                                seed=args.seed, **sampling)
    except EvalError as e:
        raise UserError(str(e)) from None


def cmd_eval(args) -> int:
    from fixrl.harness.cli import UserError
    from fixrl.evals.run import (EvalError, EvalResult, check_ks, check_policy_args, compare, evaluate,
                           load_split)
    from fixrl.sandbox import SandboxConfigError

    if args.compare:
        if args.model or args.policy:
            raise UserError("--compare takes two eval output directories; drop --model/--policy")
        try:
            a, b = (EvalResult.load(p) for p in args.compare)
            cmp = compare(a, b, seed=args.seed)
        except EvalError as e:
            raise UserError(str(e)) from None
        print(json.dumps(cmp.to_dict(), indent=2) if args.json else cmp.to_text())
        return 0
    try:  # cheap checks first: clear errors before a model or the suite loads
        check_policy_args(args.model, args.adapter, args.policy)
        check_ks(args.n, args.k)
        suite, chosen = load_split(_suite(args), args.split, args.task_ids)
    except EvalError as e:
        raise UserError(str(e)) from None
    policy, desc = _load_policy(args)
    try:
        with _rollouts(args, suite, args.n * len(chosen)) as rollouts:
            result = evaluate(policy, suite, split=args.split, n=args.n, ks=args.k, seed=args.seed,
                              task_ids=args.task_ids, rollouts=rollouts, out=args.out,
                              progress=not args.no_progress and not args.json, policy_info=desc)
    except (EvalError, SandboxConfigError) as e:
        raise UserError(str(e)) from None
    if args.json:
        print(json.dumps(result.summary(), indent=2))
    else:
        print(result.to_markdown())
        if args.out:
            print(f"results written to {args.out}/")
    return 0


def cmd_probe(args) -> int:
    from fixrl.harness.cli import UserError
    from fixrl.evals.probe import run_probe
    from fixrl.evals.run import EvalError, check_policy_args, load_split

    try:
        check_policy_args(args.model, args.adapter, args.policy)
        if args.k < 1:
            raise EvalError(f"-k must be >= 1 attempts per task, got {args.k}")
        if args.group_size < 2:
            raise EvalError(f"--group-size must be >= 2 (a group of {args.group_size} is never "
                            f"mixed)")
        if args.tries < 1 or args.mixed_groups < 1:
            raise EvalError(f"--tries and --mixed-groups must be >= 1 (got {args.tries}, "
                            f"{args.mixed_groups})")
        suite, chosen = load_split(_suite(args), args.split, args.task_ids)
    except EvalError as e:
        raise UserError(str(e)) from None
    policy, desc = _load_policy(args)
    try:
        with _rollouts(args, suite, args.k * len(chosen)) as rollouts:
            res = run_probe(policy, suite, split=args.split, k=args.k, group_size=args.group_size,
                            tries=args.tries, needed=args.mixed_groups, seed=args.seed,
                            progress=not args.no_progress and not args.json, out=args.out,
                            rollouts=rollouts, policy_info=desc, task_ids=args.task_ids)
    except (EvalError, ValueError) as e:  # SandboxConfigError (a bad --ray) is a ValueError
        raise UserError(str(e)) from None
    print(json.dumps(res.to_dict(), indent=2) if args.json else res.to_text())
    return 0


def cmd_report(args) -> int:
    from fixrl.harness.cli import UserError
    from fixrl.evals.report import ReportError, report
    from fixrl.evals.run import EvalError

    try:
        md = report(args.run, args.out)
    except (ReportError, EvalError) as e:
        raise UserError(str(e)) from None
    pngs = sorted(p.name for p in md.parent.glob("*.png"))
    print(f"wrote {md}" + (f" and {len(pngs)} plot(s): {', '.join(pngs)}" if pngs else ""))
    return 0

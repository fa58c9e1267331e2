"""fixrl sft | grpo: supervised fine-tuning (the starting adapter) and GRPO training.

Heavy imports (torch, transformers, peft) happen inside the command functions."""
from __future__ import annotations

import argparse
import json

# GRPO flags -> GRPOConfig fields (dest names equal field names); defaults None = "not given",
# so the preset's value stands unless the user sets one.
_GRPO_FLAGS = [
    (("--num-generations", "-G"), dict(type=int, help="episodes per task in a group (preset octlm: 6)")),
    (("--temperature",), dict(type=float, help="sampling temperature (also divides the trainer's logits)")),
    (("--max-turns",), dict(type=int, help="assistant turns per episode")),
    (("--max-edits",), dict(type=int, help="applied edits per episode")),
    (("--max-new-tokens",), dict(type=int, help="tokens per assistant turn")),
    (("--max-total-tokens",), dict(type=int, help="token budget of a whole episode")),
    (("--learning-rate", "--lr"), dict(type=float, dest="learning_rate", help="AdamW learning rate")),
    (("--beta",), dict(type=float, help="KL coefficient against the starting policy (0: no reference)")),
    (("--seed",), dict(type=int, help="seed of everything (data order, rollouts, initialisation)")),
    (("--eval-every",), dict(type=int, help="held-out pass@1 every N steps (0: never)")),
    (("--save-every",), dict(type=int, help="checkpoint every N steps (always at exit)")),
    (("--pool-size",), dict(type=int, help="sandboxes used concurrently")),
    (("--ray",), dict(metavar="auto|ADDRESS", help="run the episodes' sandboxes on a Ray cluster (its nodes' "
                                                   "fixrl_sandbox slots set the lockstep width)")),
    (("--min-mixed-groups",), dict(type=int, help="mixed groups wanted per update (dynamic sampling)")),
    (("--max-group-tries",), dict(type=int, help="groups tried at most per update (dynamic sampling)")),
    (("--reward",), dict(help='"hidden" (default), "public", or "module:function" of the episode info')),
    (("--lora-rank",), dict(type=int, help="rank of a new LoRA adapter")),
    (("--lora-alpha",), dict(type=int, help="alpha of a new LoRA adapter")),
    (("--lora-dropout",), dict(type=float, help="dropout of a new LoRA adapter (keep 0 for RL)")),
    (("--device",), dict(help="cpu | cuda (default: cuda when present)")),
]


def register(sub) -> None:
    g = sub.add_parser("grpo", help="train a policy with GRPO on a task suite",
                       description="GRPO with a masked loss over the policy's own tokens, dynamic sampling and "
                                   "checkpointed reply log-probs, from an SFT adapter or a new LoRA adapter.")
    g.add_argument("--model", help="base model directory (Qwen2.5 checkpoint or `fixrl init-tiny` output)")
    g.add_argument("--adapter", help="starting peft adapter directory (e.g. from `fixrl sft`), loaded trainable")
    g.add_argument("--suite", help="task suite directory")
    g.add_argument("--out", required=True, help="run directory (metrics, trajectories, checkpoints, adapter)")
    g.add_argument("--preset", default=None, help="octlm (default) | grpo | dr_grpo | dapo | rloo | gspo")
    g.add_argument("--steps", type=int, help="number of updates (preset: 100)")
    g.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    g.add_argument("--backend", choices=["local", "docker"], help="sandbox backend (default local)")
    g.add_argument("--image", help="Docker image for the sandboxes")
    for flags, kw in _GRPO_FLAGS:
        g.add_argument(*flags, default=None, **kw)
    g.add_argument("--full", action="store_true", help="full fine-tuning (tiny models) instead of LoRA")
    g.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="set any GRPOConfig field, e.g. --set scale_rewards=group (repeatable)")
    g.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    g.add_argument("--quiet", action="store_true", help="no progress display")
    g.add_argument("--json", action="store_true", help="print the run summary as JSON at the end")
    g.set_defaults(func=cmd_grpo)

    s = sub.add_parser("sft", help="supervised fine-tuning on agent conversations (makes starting adapters)",
                       description="Train a LoRA adapter (or the full model) on chat-messages JSONL or fixrl "
                                   "trajectory files, the loss masked to the assistant's tokens.")
    s.add_argument("--model", required=True, help="base model directory")
    s.add_argument("--data", required=True, action="append", metavar="FILE",
                   help="JSONL (or .jsonl.gz) of fixrl trajectories or chat messages (repeatable)")
    s.add_argument("--out", required=True, help="output adapter directory (peft format)")
    s.add_argument("--adapter", help="continue training this adapter instead of a new one")
    s.add_argument("--epochs", type=int, default=1)
    s.add_argument("--lr", "--learning-rate", type=float, default=2e-4, dest="learning_rate")
    s.add_argument("--batch-size", type=int, default=8, help="examples per optimizer step")
    s.add_argument("--micro-batch-size", type=int, default=1, help="examples per forward/backward")
    s.add_argument("--warmup-steps", type=int, default=0)
    s.add_argument("--lr-scheduler", choices=["linear", "cosine", "constant"], default="linear",
                   help="learning rate after warm-up (default linear decay to 0)")
    s.add_argument("--max-length", type=int, default=None, help="drop examples longer than this (tokens)")
    s.add_argument("--passing-only", action="store_true",
                   help="keep only episodes that passed (rejection-sampling fine-tuning)")
    s.add_argument("--lora-rank", type=int, default=16)
    s.add_argument("--lora-alpha", type=int, default=32)
    s.add_argument("--lora-dropout", type=float, default=0.0)
    s.add_argument("--lora-targets", default="all-linear",
                   help='"all-linear" (default) or comma-separated module names, e.g. q_proj,v_proj')
    s.add_argument("--full", action="store_true", help="train every weight (tiny models) instead of LoRA")
    s.add_argument("--data-vocab-head", action="store_true",
                   help="with --full on a model trained from scratch: tokens absent from the data share one "
                        "output row (the same softmax, far cheaper steps)")
    s.add_argument("--value-weight", type=float, default=1.0,
                   help="loss weight of tool-call argument values (paths, edit text) against 1")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default=None)
    s.add_argument("--quiet", action="store_true", help="no progress display")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(func=cmd_sft)


def _user_error(e: Exception):
    from fixrl.harness.cli import UserError

    return UserError(str(e))


def grpo_config_from_args(args: argparse.Namespace):
    """(config, resume overrides) from parsed arguments; raises UserError on bad input."""
    from fixrl.harness.cli import UserError
    from fixrl.train.config import make_config, parse_override

    fields: dict = {}
    for flags, kw in _GRPO_FLAGS:
        dest = kw.get("dest") or flags[0].lstrip("-").replace("-", "_")
        value = getattr(args, dest, None)
        if value is not None:
            fields[dest] = value
    for name in ("steps", "backend", "image", "adapter"):
        if getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    if args.full:
        fields["full_finetune"] = True
    try:
        for item in args.set:
            k, v = parse_override(item)
            fields[k] = v
    except ValueError as e:
        raise UserError(str(e)) from None
    if args.resume:
        given = sorted(set(fields) | ({"model"} if args.model else set()) | ({"suite"} if args.suite else set())
                       | ({"preset"} if args.preset else set()))
        from fixrl.train.grpo import RESUMABLE_OVERRIDES

        bad = [k for k in given if k not in RESUMABLE_OVERRIDES]
        if bad:
            raise UserError(f"--resume continues the run in {args.out} as it was started; drop "
                            f"{', '.join('--' + b.replace('_', '-') for b in bad)} (only "
                            f"{', '.join('--' + r.replace('_', '-') for r in RESUMABLE_OVERRIDES)} may change)")
        return None, fields  # the run directory's own config is used
    if not args.model or not args.suite:
        raise UserError("fixrl grpo needs --model DIR and --suite DIR (or --resume with the --out of a run)")
    fields.update(model=args.model, suite=args.suite, out=args.out)
    try:
        return make_config(args.preset or "octlm", **fields), None
    except ValueError as e:
        raise UserError(str(e)) from None


def cmd_grpo(args: argparse.Namespace) -> int:
    from rich.console import Console

    from fixrl.harness.cli import UserError

    cfg, overrides = grpo_config_from_args(args)
    if args.print_config and not args.resume:
        print(json.dumps(cfg.to_dict(), indent=2, sort_keys=True))
        return 0
    from fixrl.sandbox import SandboxConfigError
    from fixrl.train.grpo import RunError, run_grpo
    from fixrl.train.model import ModelError

    if args.resume:
        from pathlib import Path

        from fixrl.train.config import GRPOConfig

        path = Path(args.out) / "checkpoint" / "config.json"
        if not path.exists():
            raise UserError(f"--resume: {args.out} has no checkpoint to resume (no {path})")
        try:
            cfg = GRPOConfig.load(path, out=args.out)
        except ValueError as e:
            raise UserError(f"{path}: {e}") from None
        if args.print_config:
            print(json.dumps(cfg.to_dict(), indent=2, sort_keys=True))
            return 0
    console = None if args.quiet else Console(stderr=True)
    try:
        summary = run_grpo(cfg, resume=args.resume, overrides=overrides, console=console)
    except (RunError, ModelError, SandboxConfigError) as e:
        raise UserError(str(e)) from None
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(f"fixrl grpo: {summary['steps']} steps in {summary['seconds']:.0f}s; adapter: {summary['adapter']}")
    return 0


def cmd_sft(args: argparse.Namespace) -> int:
    from rich.console import Console

    from fixrl.train.sft import DataError, SFTConfig, run_sft
    from fixrl.train.model import ModelError

    targets = args.lora_targets
    if targets != "all-linear":
        targets = [t.strip() for t in targets.split(",") if t.strip()]
    cfg = SFTConfig(model=args.model, data=list(args.data), out=args.out, adapter=args.adapter, epochs=args.epochs,
                    learning_rate=args.learning_rate, batch_size=args.batch_size,
                    micro_batch_size=args.micro_batch_size, warmup_steps=args.warmup_steps,
                    lr_scheduler=args.lr_scheduler,
                    max_length=args.max_length, passing_only=args.passing_only, lora_rank=args.lora_rank,
                    lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout, lora_target_modules=targets,
                    full_finetune=args.full, seed=args.seed, device=args.device,
                    data_vocab_head=args.data_vocab_head, value_weight=args.value_weight)
    try:
        cfg.validate()
    except ValueError as e:
        raise _user_error(e) from None
    try:
        summary = run_sft(cfg, console=None if args.quiet else Console(stderr=True))
    except (DataError, ModelError) as e:
        raise _user_error(e) from None
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        c = summary["counts"]
        print(f"fixrl sft: {summary['examples']} examples ({c['read']} read, {c['dropped_failing']} failing dropped), "
              f"{summary['steps']} steps, loss {summary['first_loss']:.3f} -> {summary['last_loss']:.3f}; "
              f"saved {summary['out']}")
    return 0

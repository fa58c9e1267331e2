"""fixrl sft | grpo: supervised fine-tuning (the starting adapter) and GRPO training.

Every flag is a field of SFTConfig / GRPOConfig (GRPO's nested `env`, `sandbox` and `cluster` included),
help text from the field's docstring; a flag not given leaves the preset's value. Torch and
transformers load only after the cheap checks (the model directory, the suite) have passed."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from fixrl.harness.agent.policies import PolicyConfig
from fixrl.harness.agent.settings import LEGACY_DOTTED
from fixrl.harness.agent.transcript import make_console
from fixrl.harness.cli.errors import UserError
from fixrl.harness.cli.flags import add_config_flags, config_fields, given_fields, nest, parse_set
from fixrl.train.config import GRPOConfig, SFTConfig
from fixrl.train.resolve import (
    DEFAULT_PRESET,
    FIELD_ALIASES,
    PRESET_ALIASES,
    PRESETS,
    RESUMABLE_OVERRIDES,
    load_config,
    make_config,
    resolve,
)

# Earlier and shorter spellings that stay accepted.
GRPO_ALIASES = {"max_steps": ["--steps"], "eval_steps": ["--eval-every"], "save_steps": ["--save-every"],
                "learning_rate": ["--lr"], "num_generations": ["-G"], "num_iterations": ["--epochs"],
                "steps_per_generation": ["--minibatches"], "full_finetune": ["--full"]}
SFT_ALIASES = {"num_train_epochs": ["--epochs"], "learning_rate": ["--lr"], "full_finetune": ["--full"],
               "lora_target_modules": ["--lora-targets"], "data": ["--data-file"]}
# The GRPO flags that name a run, not a setting (they are checked apart with --resume).
_RUN = ("model", "suite", "out", "preset")


def register(sub) -> None:
    g = sub.add_parser("grpo", help="train a policy with GRPO on a task suite",
                       description="GRPO with a masked loss over the policy's own tokens, dynamic sampling and "
                                   "checkpointed reply log-probs, from an SFT adapter or a new LoRA adapter.")
    presets = ", ".join([*PRESETS, *(f"{a} (= {b})" for a, b in PRESET_ALIASES.items())])
    g.add_argument("--preset", default=None, help=f"a named set of fields applied over the defaults: {presets} "
                                                  f"(default {DEFAULT_PRESET})")
    g.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    add_config_flags(g, GRPOConfig, aliases=GRPO_ALIASES, skip=("preset",), title="GRPOConfig fields")
    g.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="set any GRPOConfig field by name, nested ones dotted (env.tool_timeouts is a mapping: "
                        "not settable here), e.g. --set scale_rewards=group --set env.max_malformed=2")
    g.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    g.add_argument("--quiet", action="store_true", help="no progress display")
    g.add_argument("--json", action="store_true", help="print the run summary as JSON at the end")
    g.set_defaults(func=cmd_grpo)

    s = sub.add_parser("sft", help="supervised fine-tuning on agent conversations (makes starting adapters)",
                       description="Train a LoRA adapter (or the full model) on chat-messages JSONL or fixrl "
                                   "trajectory files, the loss masked to the assistant's tokens.")
    add_config_flags(s, SFTConfig, aliases=SFT_ALIASES, required=("model", "data", "out"), title="SFTConfig fields")
    s.add_argument("--quiet", action="store_true", help="no progress display")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(func=cmd_sft)


def grpo_fields(args: argparse.Namespace) -> dict:
    """The GRPOConfig fields the user gave (flags, then --set), dotted names."""
    fields = given_fields(args, GRPOConfig)
    for item in args.set:
        try:
            name, value = parse_set(item, GRPOConfig, renames={**FIELD_ALIASES, **LEGACY_DOTTED})
        except ValueError as e:
            raise UserError(str(e)) from None
        fields[name] = value
    return fields


def _flag(dotted: str) -> str:
    own = {f.dotted: f.flag for f in config_fields(GRPOConfig) if f.flag}
    return "--" + (own.get(dotted) or dotted.rsplit(".", 1)[-1]).replace("_", "-")


def grpo_config_from_args(args: argparse.Namespace) -> tuple[GRPOConfig | None, dict | None]:
    """(config, None) for a new run; (None, resume overrides) for --resume."""
    fields = grpo_fields(args)
    if args.resume:
        if args.preset:
            fields["preset"] = PRESET_ALIASES.get(args.preset, args.preset)
        saved = _saved_config(fields.get("out"))
        # The run's own flags again (the command that was interrupted, plus --resume) are fine;
        # only a value that differs from the run's would change it.
        same = {k for k in fields if saved is not None and _same_value(k, fields[k], _dotted_get(saved, k))}
        bad = sorted(k for k in fields if k not in RESUMABLE_OVERRIDES and k != "out" and k not in same)
        if bad:
            flags = ", ".join(f"{_flag(b)} {fields[b]}" + (f" (the run has {_dotted_get(saved, b)})" if saved else "")
                              for b in bad)
            allowed = ", ".join(_flag(r) for r in RESUMABLE_OVERRIDES)
            raise UserError(f"--resume continues the run in {fields.get('out')} as it was started; drop {flags} "
                            f"(only {allowed} may change)")
        return None, nest({k: v for k, v in fields.items() if k in RESUMABLE_OVERRIDES})
    if not fields.get("model") or not fields.get("suite"):
        raise UserError("fixrl grpo needs --model DIR and --suite DIR (or --resume with the --out of a run)")
    if not fields.get("out"):
        raise UserError("fixrl grpo needs --out DIR (the run directory)")
    fields.pop("preset", None)  # given as make_config's first argument
    try:
        return make_config(args.preset or DEFAULT_PRESET, **nest(fields)), None
    except ValueError as e:
        raise UserError(str(e)) from None


def _saved_config(out: str | None) -> GRPOConfig | None:
    """The config a run in `out` was started with (None when there is none to read: the run's
    own checks say so later)."""
    path = Path(out or "") / "checkpoint" / "config.json"
    try:
        return load_config(path, out=str(out))
    except (OSError, ValueError):
        return None


def _dotted_get(config: object, dotted: str) -> object:
    for part in dotted.split("."):
        config = getattr(config, part, None)
    return config


def _same_value(name: str, given: object, saved: object) -> bool:
    """Whether a flag's value is the run's: equal, or (model, suite, adapter) the same path."""
    if given == saved:
        return True
    if isinstance(given, list) and isinstance(saved, (list, tuple)):
        return list(given) == list(saved)
    if name in ("model", "suite", "adapter") and isinstance(given, str) and isinstance(saved, str):
        return Path(given).resolve() == Path(saved).resolve()
    return False


def cmd_grpo(args: argparse.Namespace) -> int:
    cfg, overrides = grpo_config_from_args(args)
    out = Path(args.out or "")
    if args.resume:
        path = out / "checkpoint" / "config.json"
        if not path.exists():
            raise UserError(f"--resume: {out} has no checkpoint to resume (no {path})")
        try:
            # The overrides applied as the run applies them, so that --print-config shows them.
            cfg = load_config(path, **{**(overrides or {}), "out": str(out)})
        except ValueError as e:
            raise UserError(f"{path}: {e}") from None
    if args.print_config:
        print(json.dumps(resolve(cfg).to_dict(), indent=2, sort_keys=True))
        return 0
    if not args.resume:  # fail on a missing suite or model before torch and transformers load (seconds)
        if not Path(cfg.suite).is_dir():
            raise UserError(f"--suite {cfg.suite}: no such directory")
        PolicyConfig(model=cfg.model, adapter=cfg.adapter).check()
    from fixrl.train.grpo import run_grpo  # noqa: PLC0415 - torch and transformers, once the cheap checks passed

    console = None if args.quiet else make_console(stderr=True)
    summary = run_grpo(cfg, resume=args.resume, overrides=overrides, console=console)
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(f"fixrl grpo: {summary['steps']} steps in {summary['seconds']:.0f}s; adapter: {summary['adapter']}")
    return 0


def cmd_sft(args: argparse.Namespace) -> int:
    cfg = SFTConfig(**given_fields(args, SFTConfig))
    try:
        cfg.validate()
    except ValueError as e:
        raise UserError(str(e)) from None
    PolicyConfig(model=cfg.model, adapter=cfg.adapter).check()  # before torch and transformers load
    from fixrl.train.sft import run_sft  # noqa: PLC0415 - torch and transformers, once the cheap checks passed

    summary = run_sft(cfg, console=None if args.quiet else make_console(stderr=True))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        c = summary["counts"]
        print(f"fixrl sft: {summary['examples']} examples ({c['read']} read, {c['dropped_failing']} failing dropped), "
              f"{summary['steps']} steps, loss {summary['first_loss']:.3f} -> {summary['last_loss']:.3f}; "
              f"saved {summary['out']}")
    return 0

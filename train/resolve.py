"""The one place a GRPO config becomes the values a run uses.

    cfg = make_config("dapo", max_steps=50)             # a preset, then the user's fields
    cfg = load_config(run / "config.json", steps=9)     # a run directory of any version, overrides
    settings = resolve(cfg, precision="fp16")           # frozen; every derived value filled in

A preset is a named set of fields applied over the defaults (the defaults are `dynamic_mean`'s
values). Earlier versions' names are read wherever a config comes in -- `make_config`,
`load_config`, `config_from_dict` -- never elsewhere: fields (`epochs`, `minibatches`, `steps`,
`eval_every`, `save_every`), values (loss types `token_mean` ..., `scale_rewards="rloo"`), the
flat `backend` / `max_turns` / ... fields that moved into `env` and `sandbox`, and the `octlm`
preset. `resolve` fills the values derived from others (epsilon_high, the constant loss
normaliser, the groups per rollout call, the precision the device gave) into a `RunConfig`;
config.json in a run directory is that record, so it holds exactly the values the run used.

What it does not guarantee: that a config written by a later version loads here (an unknown
field is an error), or that the nested `env` and `sandbox` of a `RunConfig` are frozen (they are
the user's own records, carried as they are).
"""
from __future__ import annotations

import dataclasses
import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from fixrl.envs import EnvConfig
from fixrl.harness.agent.settings import ClusterConfig, split_legacy_sandbox
from fixrl.sandbox import SandboxConfig
from fixrl.train.config import GRPO_ENV_DEFAULTS, GRPOConfig, Precision, SFTConfig

# Earlier names of GRPOConfig fields -> today's (TRL's where TRL has one).
FIELD_ALIASES = {"epochs": "num_iterations", "minibatches": "steps_per_generation", "steps": "max_steps",
                 "eval_every": "eval_steps", "save_every": "save_steps"}
# Earlier values -> today's. verl's loss aggregation names are TRL's loss types.
LOSS_TYPE_ALIASES = {"token_mean": "dapo", "seq_mean_token_mean": "grpo", "constant": "dr_grpo"}
PRESET_ALIASES = {"octlm": "dynamic_mean"}
# Fields that moved into the nested configs (a config.json written before has them flat).
ENV_FIELDS = ("max_turns", "max_edits", "rename", "system_prompt", "tool_schemas", "reward")
SANDBOX_FIELDS = ("backend", "image", "pool_size")

RESUMABLE_OVERRIDES = ("max_steps", "eval_steps", "save_steps", "sandbox.backend", "sandbox.image", "sandbox.pool_size",
                       "cluster.address", "cluster.retries", "cluster.call_margin", "device", "tensorboard",
                       "keep_trajectories", "vllm_url", "vllm_python", "vllm_startup_timeout")
"""What `--resume` may change (today's names; earlier ones such as `steps`, `pool_size` map to these)."""


# Each preset is a diff against the dataclass defaults (= dynamic_mean). A user's explicit
# fields are applied over the preset.
PRESETS: dict[str, dict[str, Any]] = {
    # The default: G=6, advantage r - mean(group) (no std scaling), token mean over all generated
    # tokens, sampling until 4 mixed groups or 16 tried, one on-policy update (no clip), no KL.
    # (Earlier name: octlm.)
    "dynamic_mean": dict(num_generations=6, scale_rewards="none", baseline="mean", loss_type="dapo",
                         dynamic_sampling=True, min_mixed_groups=4, max_group_tries=16,
                         num_iterations=1, steps_per_generation=1, beta=0.0),
    # DeepSeekMath: mean/std advantage, per-sequence token mean, k3 KL at beta 0.04, no
    # dynamic sampling; a single update per batch as the paper reports
    "grpo": dict(scale_rewards="group", loss_type="grpo", beta=0.04, kl_estimator="k3",
                 dynamic_sampling=False, num_iterations=1, steps_per_generation=1),
    # Dr. GRPO: no std division, a constant normaliser instead of 1/|o_i|
    "dr_grpo": dict(scale_rewards="none", loss_type="dr_grpo", dynamic_sampling=False, beta=0.0),
    # DAPO: clip-higher, dynamic sampling, token-level loss, overlong shaping, no KL; two
    # optimizer steps per batch so the (asymmetric) clip has something to act on
    "dapo": dict(scale_rewards="group", loss_type="dapo", epsilon=0.2, epsilon_high=0.28,
                 dynamic_sampling=True, overlong_buffer=2, steps_per_generation=2, beta=0.0),
    # RLOO: leave-one-out baseline, the whole episode one action (sum over its tokens)
    "rloo": dict(scale_rewards="none", baseline="leave_one_out", loss_type="seq_mean_token_sum",
                 dynamic_sampling=False, num_iterations=1, steps_per_generation=1, beta=0.0),
    # GSPO: one length-normalised ratio per sequence with the paper's narrow clip ranges
    "gspo": dict(importance_sampling_level="sequence", epsilon=3e-4, epsilon_high=4e-4,
                 loss_type="grpo", steps_per_generation=2),
}
DEFAULT_PRESET = "dynamic_mean"


@dataclass(frozen=True)
class RunConfig(GRPOConfig):
    """The values one GRPO run uses: its GRPOConfig with every derived value filled in. Made by
    `resolve` once per run and logged; the run directory's config.json is its `to_dict()`, and
    loading that file back gives the same values (an earlier run resumes as it was started)."""

    epsilon_high: float = 0.2
    """The upper clip range: the user's, or epsilon."""
    groups_per_rollout: int = 4
    """Groups per batched rollout call: the user's, or min_mixed_groups (dynamic sampling) or
    tasks_per_step."""

    @property
    def needs_old_logprobs(self) -> bool:
        """Old log-probs are needed (and recomputed) when one batch makes several updates."""
        return self.num_iterations > 1 or self.steps_per_generation > 1


def resolve(cfg: GRPOConfig, precision: Precision | None = None) -> RunConfig:
    """`cfg` with its derived values filled in: epsilon_high (epsilon), loss_constant
    (env.max_turns x max_new_tokens, when the turn budget is known), groups_per_rollout, and
    `precision` when given (the setting the device resolved). Values the user set stay."""
    turns = cfg.env.max_turns
    loss_constant = cfg.loss_constant
    if loss_constant is None and turns is not None:
        loss_constant = turns * cfg.max_new_tokens
    groups = cfg.groups_per_rollout
    if groups is None:
        groups = cfg.min_mixed_groups if cfg.dynamic_sampling else cfg.tasks_per_step
    values = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    return RunConfig(**{**values, "epsilon_high": cfg.epsilon if cfg.epsilon_high is None else cfg.epsilon_high,
                        "loss_constant": loss_constant, "groups_per_rollout": groups,
                        "precision": precision or cfg.precision})


# ----------------------------------------------------------------------------- configs coming in


def make_config(preset: str | None = DEFAULT_PRESET, **fields: Any) -> GRPOConfig:
    """Defaults, then the preset's fields, then `fields` (explicit wins; earlier names accepted)."""
    preset = PRESET_ALIASES.get(preset, preset) if preset else preset
    if preset is not None and preset not in PRESETS:
        names = ", ".join([*PRESETS, *(f"{a} (= {b})" for a, b in PRESET_ALIASES.items())])
        raise ValueError(f"unknown preset {preset!r}; choose one of {names}")
    merged = merge(dict(PRESETS.get(preset, {}) if preset else {}), fields)
    merged["preset"] = preset
    return config_from_dict(merged)


def load_config(path: Path, **overrides: Any) -> GRPOConfig:
    """A saved config.json (any version) with `overrides` (any names `upgrade` knows) applied over it."""
    return config_from_dict(merge(json.loads(Path(path).read_text()), overrides))


def config_from_dict(d: dict[str, Any]) -> GRPOConfig:
    """From a config.json's dict (any version: earlier names and flat fields are upgraded)."""
    d = upgrade(d)
    names = {f.name for f in dataclasses.fields(GRPOConfig)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"unknown GRPOConfig field(s): {', '.join(unknown)}")
    if "env" in d:
        d["env"] = _env_from_dict(d["env"])
    if "sandbox" in d:
        d["sandbox"] = SandboxConfig(**d["sandbox"])
    if "cluster" in d:
        d["cluster"] = ClusterConfig(**d["cluster"])
    return GRPOConfig(**d)


def sft_config_from_dict(d: dict[str, Any]) -> SFTConfig:
    """From a saved sft_config.json's "config" (earlier names accepted: `epochs`)."""
    d = dict(d)
    if "epochs" in d:
        d.setdefault("num_train_epochs", d.pop("epochs"))
    names = {f.name for f in dataclasses.fields(SFTConfig)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"unknown SFTConfig field(s): {', '.join(unknown)}")
    return SFTConfig(**d)


def _env_from_dict(d: dict[str, Any]) -> EnvConfig:
    d = {**GRPO_ENV_DEFAULTS, **d}
    if isinstance(d.get("reward"), str):
        d["reward"] = resolve_reward(d["reward"])
    names = {f.name for f in dataclasses.fields(EnvConfig)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"unknown EnvConfig field(s) in GRPOConfig.env: {', '.join(unknown)}")
    return EnvConfig(**d)


def resolve_reward(value: str | Callable) -> str | Callable:
    """"hidden" / "public" stay strings; "module:function" is imported."""
    if callable(value) or value in ("hidden", "public"):
        return value
    module, sep, name = str(value).partition(":")
    if not sep:
        raise ValueError(f'reward={value!r}: use "hidden", "public" or "module:function"')
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"reward={value!r}: cannot import it ({e})") from e
    if not callable(fn):
        raise ValueError(f"reward={value!r} is not callable")
    return fn


# ----------------------------------------------------------------------------- earlier names


def canonical_loss_type(value: str) -> str:
    """A loss type in TRL's names (`token_mean` -> `dapo`, ...); unknown values pass through."""
    return LOSS_TYPE_ALIASES.get(value, value)


def upgrade(d: dict[str, Any]) -> dict[str, Any]:
    """A GRPOConfig dict in today's names: field and value aliases resolved, flat env/sandbox
    fields and dotted keys (`env.max_turns`) moved into the nested dicts, Ray's fields out of
    `sandbox` into `cluster`. Idempotent."""
    d = dict(d)
    env = _as_dict(d.pop("env", None))
    sandbox = _as_dict(d.pop("sandbox", None))
    cluster = _as_dict(d.pop("cluster", None))
    for old, new in FIELD_ALIASES.items():
        if old in d:
            if new in d:
                raise ValueError(f"GRPOConfig: give {new!r} or its earlier name {old!r}, not both")
            d[new] = d.pop(old)
    for key in list(d):
        part, dot, rest = key.partition(".")
        if dot and part in ("env", "sandbox", "cluster"):
            {"env": env, "sandbox": sandbox, "cluster": cluster}[part][rest] = d.pop(key)
        elif key in ENV_FIELDS:
            env[key] = d.pop(key)
        elif key in SANDBOX_FIELDS:
            sandbox[key] = d.pop(key)
    if "loss_type" in d:
        d["loss_type"] = canonical_loss_type(d["loss_type"])
    if d.get("scale_rewards") == "rloo":
        d["scale_rewards"], d["baseline"] = "none", "leave_one_out"
    if d.get("preset") in PRESET_ALIASES:
        d["preset"] = PRESET_ALIASES[d["preset"]]
    sandbox, cluster = split_legacy_sandbox(sandbox, cluster)  # Ray's fields were `sandbox.ray*`
    if env:
        d["env"] = env
    if sandbox:
        d["sandbox"] = sandbox
    if cluster:
        d["cluster"] = cluster
    return d


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` applied to `base`, both upgraded; the nested `env`, `sandbox` and `cluster` merge field by field."""
    base, over = upgrade(base), upgrade(over)
    for part in ("env", "sandbox", "cluster"):
        if part in base and part in over:
            over[part] = {**base[part], **over[part]}
    return {**base, **over}


def dotted_names(d: dict[str, Any]) -> list[str]:
    """The fields a (partial) config dict sets, in today's names: `max_steps`, `sandbox.pool_size`."""
    up = upgrade(d)
    names = [k for k in up if k not in ("env", "sandbox", "cluster")]
    for part in ("env", "sandbox", "cluster"):
        names += [f"{part}.{k}" for k in up.get(part, {})]
    return names


def _as_dict(v: Any) -> dict[str, Any]:
    if v is None:
        return {}
    return dataclasses.asdict(v) if dataclasses.is_dataclass(v) else dict(v)

"""The one config of a GRPO run, its presets, and the LoRA settings shared with SFT.

Field names and values follow TRL's GRPOConfig where TRL has one (num_generations,
temperature, beta, epsilon, epsilon_high, loss_type `grpo | bnpo | dr_grpo | dapo`,
scale_rewards `group | batch | none`, importance_sampling_level, num_iterations,
steps_per_generation, max_steps, eval_steps, save_steps, learning_rate, max_grad_norm). The
episodes' settings are an `envs.EnvConfig` and their sandboxes a `sandbox.SandboxConfig`,
nested as `env` and `sandbox`. Earlier names (`epochs`, `minibatches`, `steps`, `eval_every`,
`save_every`, loss types `token_mean` ..., `scale_rewards="rloo"`, the flat `backend` /
`max_turns` / ... fields, the `octlm` preset) are aliases, so every saved config.json still
loads. A preset is a named set of fields applied over the defaults; the defaults are the
`dynamic_mean` preset. Derived values (epsilon_high, the constant loss normaliser, the groups
per rollout call) are resolved once in `__post_init__`, so config.json in a run directory holds
exactly the values the run used.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

from fixrl.envs import EnvConfig
from fixrl.harness.agent.settings import ClusterConfig, split_legacy_sandbox
from fixrl.harness.model.precision import PRECISIONS
from fixrl.sandbox import SandboxConfig

ScaleRewards = Literal["none", "group", "batch"]
Baseline = Literal["mean", "leave_one_out"]
LossType = Literal["grpo", "bnpo", "dr_grpo", "dapo", "seq_mean_token_sum"]
KLEstimator = Literal["k1", "k2", "k3"]
ISLevel = Literal["token", "sequence"]

# Earlier names of GRPOConfig fields -> today's (TRL's where TRL has one).
FIELD_ALIASES = {"epochs": "num_iterations", "minibatches": "steps_per_generation", "steps": "max_steps",
                 "eval_every": "eval_steps", "save_every": "save_steps"}
# Earlier values -> today's. verl's loss aggregation names are TRL's loss types.
LOSS_TYPE_ALIASES = {"token_mean": "dapo", "seq_mean_token_mean": "grpo", "constant": "dr_grpo"}
PRESET_ALIASES = {"octlm": "dynamic_mean"}
# Fields that moved into the nested configs (a config.json written before has them flat).
ENV_FIELDS = ("max_turns", "max_edits", "rename", "system_prompt", "tool_schemas", "reward")
SANDBOX_FIELDS = ("backend", "image", "pool_size")
# GRPO's episodes differ from EnvConfig's defaults in these (a partial `env` is merged over them).
GRPO_ENV_DEFAULTS: dict[str, Any] = {"max_turns": 6, "rename": True}


def canonical_loss_type(value: str) -> str:
    """A loss type in TRL's names (`token_mean` -> `dapo`, ...); unknown values pass through."""
    return LOSS_TYPE_ALIASES.get(value, value)

ALL_LINEAR = "all-linear"


@dataclass
class LoRAConfig:
    """How the trainable weights are made; shared by `fixrl sft` and `fixrl grpo`."""

    lora_rank: int = 16
    """LoRA rank r (ignored with full_finetune or when starting from an adapter directory)."""
    lora_alpha: int = 32
    """LoRA scaling numerator: the update is (alpha / r) * B @ A."""
    lora_dropout: float = 0.0
    """Dropout on the LoRA input. Keep 0 for RL: with dropout the trainer's forward no longer
    equals the sampler's, and the importance ratio leaves 1 even on a single update."""
    lora_target_modules: str | list[str] = ALL_LINEAR
    """peft target modules; "all-linear" = every nn.Linear of the decoder except the output head."""
    full_finetune: bool = False
    """Train every weight instead of a LoRA adapter (tiny models; the saved model is then a full
    checkpoint directory, not an adapter)."""


@dataclass
class GRPOConfig(LoRAConfig):
    """Every setting `fixrl grpo` reads. Defaults are the `octlm` preset."""

    # ---- what to train, on what --------------------------------------------------------
    model: str = ""
    """Base model directory (a Qwen2.5 checkpoint or `fixrl init-tiny`'s)."""
    adapter: str | None = None
    """Start from this peft adapter directory (an SFT adapter), loaded trainable. None: a new
    adapter (or full fine-tuning)."""
    suite: str = ""
    """Task suite directory."""
    split: str = "train"
    """Split of the suite the trainer samples tasks from."""
    eval_split: str = "heldout"
    """Split the periodic held-out evaluation runs on."""
    out: str = ""
    """Run directory: config.json, metrics.jsonl, trajectories/, checkpoints, TensorBoard events."""
    env: EnvConfig = dataclasses.field(default_factory=lambda: EnvConfig(**GRPO_ENV_DEFAULTS))
    """The episodes: turn and edit budgets, renaming, prompt, reward (`envs.EnvConfig`). GRPO's
    defaults: 6 turns, renaming on (a function's name then carries no information about its fix)."""
    sandbox: SandboxConfig = dataclasses.field(default_factory=SandboxConfig)
    """The sandboxes behind the episodes: backend, image, pool size (`sandbox.SandboxConfig`);
    one pool serves training and its periodic evaluations."""
    cluster: ClusterConfig = dataclasses.field(default_factory=ClusterConfig)
    """The Ray cluster that runs the episodes' environment side, if any (`--ray`; a config.json
    written before kept these fields as `sandbox.ray*`)."""

    # ---- sampling ----------------------------------------------------------------------
    num_generations: int = 6
    """G: episodes per task in one group. The group mean is the baseline."""
    temperature: float = 1.0
    """Sampling temperature; the trainer divides logits by the same value for its log-probs."""
    top_p: float = 1.0
    """Nucleus sampling. Below 1 the sampler's distribution is no longer the trainer's softmax."""
    max_new_tokens: int = 256
    """Tokens the policy may sample per turn."""
    max_total_tokens: int = 6144
    """Token budget of a whole trajectory (prompt, turns and tool results); past it the episode
    ends as out of tokens."""

    # ---- dynamic sampling --------------------------------------------------------------
    dynamic_sampling: bool = True
    """DAPO: keep only groups whose rewards differ, sampling more groups until
    min_mixed_groups are kept or max_group_tries were tried."""
    min_mixed_groups: int = 4
    """Mixed groups wanted per update (dynamic sampling)."""
    max_group_tries: int = 16
    """Groups rolled out at most per update (dynamic sampling); the batch may come up short."""
    groups_per_rollout: int | None = None
    """Groups rolled out together in one batched call. None: min_mixed_groups (dynamic sampling)
    or tasks_per_step."""
    tasks_per_step: int = 4
    """Groups per update when dynamic sampling is off (all kept, uniform ones included)."""
    skip_solved: bool = False
    """Draw tasks whose recent groups all passed less often (they give zero advantage)."""
    skip_hopeless: bool = False
    """Draw tasks whose recent groups all failed less often."""
    skip_keep_prob: float = 0.25
    """Chance that a solved/hopeless task is still drawn when its turn comes (skip_* on)."""
    outcome_memory: int = 2
    """Recent groups remembered per task to call it solved or hopeless (all of them uniform)."""

    # ---- advantages --------------------------------------------------------------------
    scale_rewards: ScaleRewards = "none"
    """Advantage scaling: "none" (Dr. GRPO), "group" (divided by the group's population std,
    DeepSeekMath), "batch" (by the whole batch's std). Earlier "rloo" = "none" with
    baseline="leave_one_out"."""
    baseline: Baseline = "mean"
    """What an episode's reward is compared with: "mean" of its group, or "leave_one_out" (the
    mean of the other members: RLOO, G/(G-1) times the "mean" advantage)."""
    overlong_buffer: int = 0
    """DAPO-style overlong shaping over the turn budget: the reward falls linearly by up to 1
    over the last `overlong_buffer` turns. 0: off."""

    # ---- loss and update ---------------------------------------------------------------
    loss_type: LossType = "dapo"
    """How per-token terms are averaged (TRL's names): "dapo" over every generated token of the
    minibatch; "bnpo" over each micro-batch's tokens, then over micro-batches; "grpo" per
    sequence then over sequences (DeepSeekMath); "dr_grpo" sum divided by (sequences x
    loss_constant); "seq_mean_token_sum" sum per sequence, mean over sequences (RLOO: the
    episode is one action). Earlier names: token_mean, seq_mean_token_mean, constant."""
    loss_constant: int | None = None
    """Normaliser of loss_type="dr_grpo"; None: env.max_turns x max_new_tokens."""
    num_iterations: int = 1
    """Passes over each sampled batch (TRL's mu; earlier `epochs`). 1 with steps_per_generation=1
    is one on-policy update (ratio 1)."""
    steps_per_generation: int = 1
    """Optimizer steps per pass over a batch (earlier `minibatches`). Above 1 (or
    num_iterations above 1) the PPO clip applies, against old log-probs recomputed by the
    trainer's own forward before the first update."""
    epsilon: float = 0.2
    """Lower clip range: the ratio is clipped at 1 - epsilon."""
    epsilon_high: float | None = None
    """Upper clip range (DAPO's clip-higher); None: epsilon."""
    importance_sampling_level: ISLevel = "token"
    """"token": one ratio per token (PPO/GRPO); "sequence": GSPO's length-normalised sequence
    ratio, shared by the sequence's tokens."""
    beta: float = 0.0
    """KL coefficient against the starting policy. 0: no reference forward at all. Above 0 the
    reference is the base weights with the adapter disabled (new adapter) or a frozen copy of
    the starting adapter in the same model (never a second full model)."""
    kl_estimator: KLEstimator = "k3"
    """Per-token KL estimator with l = log(pi_ref/pi): k1 = -l, k2 = l^2/2, k3 = e^l - 1 - l."""
    learning_rate: float = 2e-5
    """AdamW learning rate (LoRA needs more than full fine-tuning)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    warmup_steps: int = 0
    """Linear learning-rate warm-up over this many optimizer steps."""
    max_grad_norm: float = 1.0
    """Gradient norm clip."""
    chunk_size: int = 256
    """Reply positions per chunk of the output head (memory: chunk x vocab floats)."""
    micro_batch_size: int = 1
    """Trajectories per forward/backward (gradients accumulate over a minibatch)."""

    # ---- schedule ----------------------------------------------------------------------
    seed: int = 0
    """Seeds Python, NumPy and torch, the sampler's data order and the rollouts."""
    max_steps: int = 100
    """Updates (sample -> advantages -> loss -> step) in the run (earlier `steps`)."""
    eval_steps: int = 10
    """Held-out evaluation every N steps (and after the last step); 0: never (earlier `eval_every`)."""
    eval_generations: int = 1
    """Episodes per held-out task in the periodic evaluation (pass@1 over them)."""
    eval_max_tasks: int | None = None
    """Evaluate on at most this many held-out tasks (None: all)."""
    save_steps: int = 10
    """Checkpoint every N steps (and always at exit); 0: only at exit (earlier `save_every`)."""
    keep_trajectories: bool = True
    """Write every sampled trajectory to trajectories/step_XXXXXX.jsonl.gz."""
    tensorboard: bool = True
    """Write TensorBoard events to RUN/tb (skipped with a warning when tensorboard is absent)."""
    device: str | None = None
    """"cpu", "cuda" or None (CUDA when present)."""
    precision: Literal["fp32", "fp16", "bf16"] | None = None
    """"fp32", "fp16" (frozen weights float16, LoRA float32, fp16 autocast and a GradScaler: the
    T4 path) or "bf16"; None: fp16 on CUDA, fp32 elsewhere. A run records the resolved value."""
    preset: str | None = None
    """The preset these values came from (for the record only)."""

    def __post_init__(self) -> None:
        if isinstance(self.env, dict):
            self.env = _env_from_dict(self.env)
        if isinstance(self.sandbox, dict):
            self.sandbox = SandboxConfig(**self.sandbox)
        if isinstance(self.cluster, dict):
            self.cluster = ClusterConfig(**self.cluster)
        self.loss_type = canonical_loss_type(self.loss_type)
        if self.epsilon_high is None:
            self.epsilon_high = self.epsilon
        if self.loss_constant is None and self.env.max_turns is not None:
            self.loss_constant = self.env.max_turns * self.max_new_tokens
        if self.groups_per_rollout is None:
            self.groups_per_rollout = self.min_mixed_groups if self.dynamic_sampling else self.tasks_per_step
        self.validate()

    @property
    def max_turns(self) -> int | None:
        """The episodes' turn budget (`env.max_turns`; None: each task's own)."""
        return self.env.max_turns

    def validate(self) -> None:
        def bad(name: str, why: str) -> ValueError:
            return ValueError(f"GRPOConfig.{name}={_get(self, name)!r}: {why}")

        for name, t in _literal_fields().items():
            if getattr(self, name) not in t:
                raise bad(name, f"must be one of {', '.join(map(repr, t))}")
        for name in ("num_generations", "max_new_tokens", "max_total_tokens", "num_iterations",
                     "steps_per_generation", "min_mixed_groups", "max_group_tries", "tasks_per_step",
                     "chunk_size", "micro_batch_size", "eval_generations", "outcome_memory"):
            if int(getattr(self, name)) < 1:
                raise bad(name, "must be at least 1")
        try:
            self.sandbox.validate()
        except ValueError as e:
            raise ValueError(f"GRPOConfig.sandbox: {e}") from None
        try:
            self.cluster.validate()
        except ValueError as e:
            raise ValueError(f"GRPOConfig.cluster: {e}") from None
        if self.env.max_turns is not None and self.env.max_turns < 1:
            raise bad("env.max_turns", "must be at least 1 (or None: each task's own)")
        if self.num_generations < 2:
            raise bad("num_generations", "a group needs at least 2 episodes to have a baseline")
        for name in ("max_steps", "eval_steps", "save_steps", "overlong_buffer", "warmup_steps"):
            if int(getattr(self, name)) < 0:
                raise bad(name, "must be >= 0")
        if self.max_group_tries < self.min_mixed_groups:
            raise bad("max_group_tries", f"must be >= min_mixed_groups ({self.min_mixed_groups})")
        if self.temperature <= 0:
            raise bad("temperature", "must be > 0 (the trainer divides logits by it)")
        if not 0 < self.top_p <= 1:
            raise bad("top_p", "must be in (0, 1]")
        if self.epsilon < 0 or self.epsilon_high < 0:
            raise bad("epsilon", "clip ranges must be >= 0")
        if self.beta < 0 or self.learning_rate <= 0 or self.max_grad_norm <= 0:
            raise bad("beta" if self.beta < 0 else "learning_rate", "must be positive")
        if not 0 <= self.skip_keep_prob <= 1:
            raise bad("skip_keep_prob", "must be in [0, 1]")
        if self.overlong_buffer and self.env.max_turns is None:
            raise bad("overlong_buffer", "needs env.max_turns (the budget it shapes over)")
        if self.env.max_turns is not None and self.overlong_buffer > self.env.max_turns:
            raise bad("overlong_buffer", f"must be <= env.max_turns ({self.env.max_turns})")
        if self.loss_type == "dr_grpo" and not self.loss_constant:
            raise bad("loss_constant", 'loss_type "dr_grpo" needs it (or env.max_turns to derive it from)')
        if self.precision is not None and self.precision not in PRECISIONS:
            raise bad("precision", f"must be one of {', '.join(map(repr, PRECISIONS))} (or None: by device)")
        reward = self.env.reward
        if not (isinstance(reward, str) and reward in ("hidden", "public")) and not callable(reward):
            raise bad("env.reward", 'must be "hidden", "public", "module:function" or a callable')

    def updated(self, **changes: Any) -> GRPOConfig:
        """A copy with `changes` (any names `upgrade` knows). A value derived from other fields
        (epsilon_high, loss_constant, groups_per_rollout) is derived again from the new ones,
        unless it was set to something else or is among the changes."""
        d = self.to_dict()
        derived = {"epsilon_high": self.epsilon,
                   "loss_constant": self.env.max_turns * self.max_new_tokens if self.env.max_turns else None,
                   "groups_per_rollout": self.min_mixed_groups if self.dynamic_sampling else self.tasks_per_step}
        for name, value in derived.items():
            if d[name] == value:
                d[name] = None
        return GRPOConfig.from_dict(merge(d, changes))

    # derived values a run reads
    @property
    def needs_old_logprobs(self) -> bool:
        """Old log-probs are needed (and recomputed) when one batch makes several updates."""
        return self.num_iterations > 1 or self.steps_per_generation > 1

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        reward = self.env.reward
        if callable(reward):
            d["env"]["reward"] = f"{getattr(reward, '__module__', '?')}:{getattr(reward, '__qualname__', repr(reward))}"
        return d

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: Path, **overrides: Any) -> GRPOConfig:
        """A saved config.json with `overrides` (any names `upgrade` knows) applied over it."""
        return cls.from_dict(merge(json.loads(Path(path).read_text()), overrides))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GRPOConfig:
        """From a config.json (any version: earlier names and flat fields are upgraded)."""
        d = upgrade(d)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown GRPOConfig field(s): {', '.join(unknown)}")
        return cls(**d)


def _get(cfg: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def _env_from_dict(d: dict[str, Any]) -> EnvConfig:
    d = {**GRPO_ENV_DEFAULTS, **d}
    if isinstance(d.get("reward"), str):
        d["reward"] = resolve_reward(d["reward"])
    names = {f.name for f in dataclasses.fields(EnvConfig)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"unknown EnvConfig field(s) in GRPOConfig.env: {', '.join(unknown)}")
    return EnvConfig(**d)


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
    sandbox, cluster = split_legacy_sandbox(sandbox, cluster)   # Ray's fields were `sandbox.ray*`
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


@dataclass
class SFTConfig(LoRAConfig):
    """Every setting `fixrl sft` reads."""

    model: str = ""
    """Base model directory."""
    data: list[str] = dataclasses.field(default_factory=list)
    """JSONL files (optionally .gz): fixrl trajectories or chat messages."""
    out: str = ""
    """Output: the adapter directory (peft format), or a full checkpoint with --full."""
    adapter: str | None = None
    """Continue training this adapter (loaded trainable) instead of a new one."""
    num_train_epochs: int = 1
    """Passes over the data (TRL's name; earlier `epochs`)."""
    learning_rate: float = 2e-4
    """AdamW learning rate (LoRA; use ~1e-5 for full fine-tuning of a real model)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    warmup_steps: int = 0
    """Linear learning-rate warm-up over this many optimizer steps."""
    lr_scheduler: str = "linear"
    """After warm-up: "linear" decay to 0 at the last step (the transformers Trainer's default),
    "cosine", or "constant". A constant rate leaves the weights wherever the last few batches
    pushed them: at 2e-3 with batches of 4, a tiny policy's choice of first tool followed them
    (p(read) 0.11 where the demonstrations had 0.32)."""
    batch_size: int = 8
    """Examples per optimizer step (the loss is the token mean over the step's examples)."""
    micro_batch_size: int = 1
    """Examples per forward/backward (gradients accumulate over a batch)."""
    max_grad_norm: float = 1.0
    """Gradient norm clip."""
    max_length: int | None = None
    """Drop examples longer than this many tokens (None: keep all)."""
    passing_only: bool = False
    """Keep only passing episodes (rejection-sampling fine-tuning)."""
    chunk_size: int = 256
    """Reply positions per output-head chunk."""
    seed: int = 0
    """Data order and LoRA initialisation."""
    device: str | None = None
    """"cpu", "cuda" or None (CUDA when present)."""
    precision: Literal["fp32", "fp16", "bf16"] | None = None
    """"fp32", "fp16" (frozen weights float16, LoRA float32, fp16 autocast and a GradScaler) or
    "bf16"; None: fp16 on CUDA, fp32 elsewhere. sft_config.json records the resolved value."""

    def validate(self) -> None:
        for name in ("num_train_epochs", "batch_size", "micro_batch_size", "chunk_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"SFTConfig.{name}={getattr(self, name)} must be at least 1")
        if self.learning_rate <= 0:
            raise ValueError(f"SFTConfig.learning_rate={self.learning_rate} must be > 0")
        if not self.data:
            raise ValueError("SFTConfig.data: give at least one data file")
        if self.lr_scheduler not in ("linear", "cosine", "constant"):
            raise ValueError(f"SFTConfig.lr_scheduler={self.lr_scheduler!r}: use linear, cosine or constant")
        if self.precision is not None and self.precision not in PRECISIONS:
            raise ValueError(f"SFTConfig.precision={self.precision!r}: use {', '.join(PRECISIONS)} "
                             "(or None: by device)")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SFTConfig:
        """From a saved sft_config.json's "config" (earlier names accepted: `epochs`)."""
        d = dict(d)
        if "epochs" in d:
            d.setdefault("num_train_epochs", d.pop("epochs"))
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown SFTConfig field(s): {', '.join(unknown)}")
        return cls(**d)


RESUMABLE_OVERRIDES = ("max_steps", "eval_steps", "save_steps", "sandbox.backend", "sandbox.image", "sandbox.pool_size",
                       "cluster.address", "cluster.retries", "cluster.call_margin", "device", "tensorboard",
                       "keep_trajectories")
"""What `--resume` may change (today's names; earlier ones such as `steps`, `pool_size` map to these)."""


# Each preset is a diff against the dataclass defaults (= octlm). A user's explicit fields
# are applied over the preset.
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


def make_config(preset: str | None = DEFAULT_PRESET, **fields: Any) -> GRPOConfig:
    """Defaults, then the preset's fields, then `fields` (explicit wins; earlier names accepted)."""
    preset = PRESET_ALIASES.get(preset, preset) if preset else preset
    if preset is not None and preset not in PRESETS:
        names = ", ".join([*PRESETS, *(f"{a} (= {b})" for a, b in PRESET_ALIASES.items())])
        raise ValueError(f"unknown preset {preset!r}; choose one of {names}")
    merged = merge(dict(PRESETS.get(preset, {}) if preset else {}), fields)
    merged["preset"] = preset
    return GRPOConfig.from_dict(merged)


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


def parse_override(text: str) -> tuple[str, Any]:
    """"field=value" -> (field, value parsed as the field's type), for `--set`."""
    name, sep, raw = text.partition("=")
    fields = {f.name: f for f in dataclasses.fields(GRPOConfig)}
    if not sep or name not in fields:
        raise ValueError(f"--set {text!r}: expected FIELD=VALUE with FIELD one of the GRPOConfig "
                         f"fields ({', '.join(sorted(fields))})")
    hint = typing.get_type_hints(GRPOConfig)[name]
    raw = raw.strip()
    if raw.lower() in ("none", "null"):
        return name, None
    args = typing.get_args(hint) or (hint,)
    try:
        if bool in args:
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError("expected true/false")
            return name, raw.lower() in ("1", "true", "yes", "on")
        if int in args:
            return name, int(raw)
        if float in args:
            return name, float(raw)
    except ValueError as e:
        raise ValueError(f"--set {text!r}: {e}") from None
    if name == "lora_target_modules" and "," in raw:
        return name, [s.strip() for s in raw.split(",") if s.strip()]
    return name, raw


def _literal_fields() -> dict[str, tuple]:
    hints = typing.get_type_hints(GRPOConfig)
    return {name: typing.get_args(t) for name, t in hints.items() if typing.get_origin(t) is Literal}

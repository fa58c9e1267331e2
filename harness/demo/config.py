"""DemoConfig: the demo's whole recipe, one record. It is composed of the configs of the jobs it
runs -- `EnvConfig` for every episode, `SandboxConfig` for their sandboxes, `SFTConfig` for the
fine-tuning stages, `GRPOConfig` for GRPO -- plus what is the demo's own (the tiny model's size,
the demonstrations, the SFT stages' data, the probe and the evaluations). Why each default is
what it is: harness/demo/NOTES.md.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from fixrl.envs import EnvConfig
from fixrl.harness.agent.settings import ClusterConfig
from fixrl.sandbox import SandboxConfig
from fixrl.train.config import GRPOConfig, SFTConfig
from fixrl.train.resolve import DEFAULT_PRESET, make_config, resolve

DEMO_PROMPT = ("Fix the bug. Tools: read(path), test(), edit(path, old, new), submit(). "
               "One tool call per reply; {max_turns} calls{edits}.")

# The demo's GRPO settings over a preset (NOTES.md says how they were chosen).
DEMO_GRPO: dict[str, Any] = dict(max_steps=20, learning_rate=4e-4, lora_rank=32, lora_alpha=64, temperature=0.7,
                                 max_new_tokens=96, max_group_tries=8, eval_steps=0)
# --quick: every stage in a few minutes.
QUICK_GRPO: dict[str, Any] = dict(max_steps=2, max_new_tokens=48, num_generations=2, min_mixed_groups=1,
                                  max_group_tries=4)


def demo_grpo(preset: str = DEFAULT_PRESET) -> GRPOConfig:
    """The demo's GRPO settings over `preset` (model, suite and run directory are the demo's to fill)."""
    return make_config(preset, **DEMO_GRPO)


@dataclass
class DemoConfig:
    """Every setting of `fixrl demo`."""

    out: str = "runs/demo"
    """Output directory; every stage's files go here and are reused on a rerun."""
    suite: str | None = None
    """Suite directory; None: the built-in `gym` suite."""
    quick: bool = False
    """Every stage in a few minutes, with fewer steps and episodes (the tests run this)."""
    seed: int = 0
    """Seeds every stage (each stage offsets it), SFT and GRPO included."""
    hidden_size: int = 64
    """Width of the tiny policy (its tokenizer and chat format are Qwen2.5's)."""
    num_layers: int = 4
    """Decoder layers of the tiny policy."""
    demo_mix: dict[str, int] = field(default_factory=lambda: {"random": 110, "blind": 330, "oracle": 110})
    """Demonstration episodes by scripted policy, trained on whole, spread evenly over the train tasks."""
    after_read: int = 550
    """Further informed (oracle) episodes whose choice to read is left out of the SFT loss: how to
    use a read, not when to read."""
    informed_tests: bool = False
    """Informed demonstrations call `test` between their fix and `submit` (off: read, edit, submit)."""
    excerpt_copies: int = 3
    """Excerpts (`excerpts.py`) of each informed demonstration for the first SFT stage; 0: no such stage."""
    path_copies: int = 1
    """Path excerpts of each demonstration (the issue's file swapped for another, only the path in
    the loss), in the first and the last SFT stage; 0: none."""
    excerpt_lines: int = 3
    """Lines of the read shown in an excerpt besides the header and the edit's line."""
    sft_excerpt_epochs: int = 2
    """SFT epochs on the excerpts."""
    sft_informed_epochs: int = 1
    """SFT epochs on the whole informed demonstrations, between the excerpts and the whole mix; 0: skip."""
    value_weight: float = 5.0
    """SFT loss weight of tool-call argument values (`weights.py`), against 1 for other reply tokens."""
    eval_n: int = 8
    """Episodes per held-out task in the start and end evaluations."""
    ks: tuple[int, ...] = (1, 4, 8)
    """pass@k reported by the evaluations."""
    probe_k: int = 4
    """Attempts per task in the probe."""
    probe_tasks: int = 32
    """Train tasks the probe tries (a fixed sample; the whole split when it has fewer)."""
    env: EnvConfig = field(default_factory=lambda: EnvConfig(rename=True, system_prompt=DEMO_PROMPT,
                                                             tool_schemas=False))
    """Every episode's settings: renaming on, the short prompt, no tool schemas (GRPO keeps its own turn budget)."""
    sandbox: SandboxConfig = field(default_factory=lambda: SandboxConfig(pool_size=24))
    """The sandboxes of every stage's episodes; 24 = GRPO's rollouts of 4 groups of 6."""
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    """The Ray cluster of every stage's episodes, if any (`--ray`)."""
    sft: SFTConfig = field(default_factory=lambda: SFTConfig(num_train_epochs=2, learning_rate=2e-3, batch_size=4,
                                                             micro_batch_size=4, full_finetune=True))
    """The SFT stages' shared settings; `num_train_epochs` is the last stage's (the whole mix)."""
    grpo: GRPOConfig = field(default_factory=demo_grpo)
    """GRPO's settings (its temperature and max_new_tokens are every policy's of the demo)."""

    def __post_init__(self) -> None:
        self._check()
        if self.quick:
            self._make_quick()
        # One seed and one set of episode settings for every stage (GRPO keeps its turn budget).
        self.sft = dataclasses.replace(self.sft, seed=self.seed)
        self.grpo = self.grpo.updated(seed=self.seed, sandbox=dataclasses.asdict(self.sandbox),
                                      cluster=dataclasses.asdict(self.cluster),
                                      env={**dataclasses.asdict(self.env), "max_turns": self.grpo.env.max_turns})

    def _check(self) -> None:
        counts = [(f"demo_mix[{k!r}]", v) for k, v in self.demo_mix.items()] + [
            (name, getattr(self, name)) for name in ("after_read", "sft_informed_epochs", "excerpt_copies",
                                                      "excerpt_lines", "sft_excerpt_epochs", "path_copies")]
        for name, value in counts:
            if value < 0:
                raise ValueError(f"DemoConfig.{name} must be >= 0, got {value}")
        informed_stages = self.sft_informed_epochs or (self.excerpt_copies and self.sft_excerpt_epochs)
        if informed_stages and not (self.demo_mix.get("oracle") or self.after_read):
            raise ValueError("DemoConfig.sft_informed_epochs and excerpt_copies need informed demonstrations "
                             "(demo_mix['oracle'] or after_read > 0); set both to 0 to train on the mix only")
        if self.probe_tasks < 1:
            raise ValueError(f"DemoConfig.probe_tasks must be >= 1, got {self.probe_tasks}")

    def _make_quick(self) -> None:
        self.demo_mix, self.after_read = {"random": 8, "blind": 8, "oracle": 8}, 16
        self.probe_tasks, self.eval_n, self.probe_k, self.ks = 8, 2, 2, (1, 2)
        self.sft_informed_epochs = min(self.sft_informed_epochs, 1)
        self.excerpt_copies, self.sft_excerpt_epochs = min(self.excerpt_copies, 1), min(self.sft_excerpt_epochs, 1)
        self.path_copies = min(self.path_copies, 1)
        self.hidden_size, self.num_layers = min(self.hidden_size, 64), min(self.num_layers, 2)
        self.sandbox = dataclasses.replace(self.sandbox, pool_size=8)
        self.sft = dataclasses.replace(self.sft, num_train_epochs=1)
        self.grpo = self.grpo.updated(**QUICK_GRPO)

    def to_dict(self) -> dict[str, Any]:
        # GRPO's derived values (epsilon_high, ...) as its run uses them
        return {**dataclasses.asdict(self), "grpo": resolve(self.grpo).to_dict()}

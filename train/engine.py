"""The sampling engine of a GRPO run: the trained model itself (`engine="hf"`), or a vLLM server
that gets the LoRA adapter after every update (`engine="vllm"`), and the off-policy correction
the second needs.

    policy = sampler_policy(run, learner)        # HFPolicy around the model, or VLLMPolicy
    sync_adapter(policy, learner, out, step)     # vllm: save the adapter, load it by a new name
    w, gap = tis_weights(old_logp, sampler_logp, mask, cap)

Only the adapter travels: `save_pretrained` writes a few MB, `/v1/load_lora_adapter` loads it
under the name `adapter-N`, and the next episodes name it (TRL #5975: merging and pushing full
weights is slow and lossy). Each trajectory records the adapter that sampled it
(`Trajectory.policy_versions`). Full fine-tuning is refused with engine vllm (train.config).

What it does not guarantee: that the engine's log-probs equal the trainer's. Kernels and
precision differ (on a CPU in float32 they agree to ~1e-6; bf16 or a GPU moves them further),
so both are recorded, their gap is a metric (`engine/logp_gap`, `engine/logp_gap_max`), and
truncated importance sampling scales each token's surrogate by min(pi_old / pi_vllm, cap).
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from fixrl.harness.agent.policies import Policy, TimedPolicy
from fixrl.harness.agent.policies.hf import HFPolicy
from fixrl.train.errors import RunError
from fixrl.train.model import is_peft

ADAPTERS_DIR = "vllm-adapters"
"""Under the run directory: the adapter of each step as the server loaded it (the last two kept)."""


def sampler_policy(run: Any, learner: Any) -> TimedPolicy:
    """The policy that samples the run's episodes: the trained model itself (hf), or a vLLM
    server for the run's base model (started here unless `run.vllm_url`; the caller closes it)."""
    if run.engine == "hf":
        return TimedPolicy(HFPolicy(model=learner.model, tokenizer=learner.tokenizer, temperature=run.temperature,
                                    top_p=run.top_p, max_new_tokens=run.max_new_tokens, precision=learner.precision))
    if not is_peft(learner.model):
        raise RunError("engine vllm syncs a LoRA adapter; this run trains the full model (use engine hf)")
    # The server's own venv and transformers' tokenizer, only for a vllm run.
    from fixrl.harness.agent.policies.vllm import VLLMPolicy  # noqa: PLC0415 - only a vllm run needs it
    from fixrl.harness.agent.policies.vllm_server import ServerSpec, VLLMServerError  # noqa: PLC0415 - with the policy above

    rank = int(getattr(learner.model.peft_config["default"], "r", 16))
    spec = ServerSpec(model=str(run.model), python=run.vllm_python, startup_timeout=run.vllm_startup_timeout,
                      max_lora_rank=_vllm_rank(rank))
    try:
        return TimedPolicy(VLLMPolicy(run.model, url=run.vllm_url, spec=spec, temperature=run.temperature,
                                      top_p=run.top_p, max_new_tokens=run.max_new_tokens))
    except VLLMServerError as e:
        raise RunError(f"engine vllm: {e}") from e


def _vllm_rank(rank: int) -> int:
    # vLLM accepts only these max_lora_rank values.
    for allowed in (8, 16, 32, 64, 128, 256, 320, 512):
        if rank <= allowed:
            return allowed
    raise RunError(f"lora_rank {rank}: vLLM serves LoRA ranks up to 512")


def sync_adapter(policy: Policy, learner: Any, out: Path, step: int) -> str | None:
    """After the update of `step` (0: the starting adapter): save the adapter and have the
    engine serve it; returns its version name (None for an engine that samples the model itself)."""
    load = getattr(policy, "load_adapter", None)
    if load is None:
        return None
    root = Path(out) / ADAPTERS_DIR
    path = root / f"step-{step:06d}"
    if path.exists():
        shutil.rmtree(path)
    learner.model.save_pretrained(path)
    name = load(path)
    for old in sorted(root.glob("step-*"))[:-2]:
        shutil.rmtree(old, ignore_errors=True)
    return name


def tis_weights(old_logp: Tensor, sampler_logp: Tensor, mask: Tensor, cap: float) -> tuple[Tensor, dict[str, float]]:
    """Truncated importance sampling weights min(exp(old - sampler), cap) [B, T] (1 off the mask)
    and the gap statistics of the two log-probs on the mask (sums, so micro-batches add up):
    {"tokens", "gap_abs_sum", "gap_max", "capped"}."""
    m = mask.bool()
    diff = (old_logp.detach() - sampler_logp.to(old_logp.device)).masked_fill(~m, 0.0)  # [B, T]
    weights = diff.exp().clamp(max=cap).masked_fill(~m, 1.0)  # [B, T]
    gap = diff.abs()[m]
    stats = {"tokens": float(m.sum()), "gap_abs_sum": float(gap.sum()),
             "gap_max": float(gap.max()) if gap.numel() else 0.0,
             "capped": float((diff.exp() > cap)[m].sum())}
    return weights, stats


def sampler_logprobs(trajs: list[Any], width: int, device: Any) -> Tensor:
    """[b, width] the recorded sampler log-probs of each trajectory, right-padded with 0 (missing
    ones -- a scripted policy's -- are 0 too and then never used: see `tis_weights`' mask)."""
    out = torch.zeros(len(trajs), width, dtype=torch.float32)
    for i, t in enumerate(trajs):
        row = t.sampler_logprobs[:width]
        if row:
            out[i, :len(row)] = torch.tensor(row, dtype=torch.float32)
    return out.to(device)

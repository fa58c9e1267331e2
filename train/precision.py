"""Mixed-precision training as a setting (`fixrl.harness.model.precision` says what each one means):
the forward's autocast, the GradScaler, the trainable weights' dtype, and one optimizer step
that skips -- and reports -- a step whose gradients are not finite.

What it does not guarantee: that fp16 training converges where fp32 does. The GradScaler keeps
float16 gradients from underflowing and skips steps that overflow; a run whose loss scale keeps
falling (`train/loss_scale`, `train/skipped_steps` in the metrics) has gradients float16
cannot represent, and should run in fp32 (or bf16 on a GPU that has it).
"""
from __future__ import annotations

import math
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch

from fixrl.harness.model.precision import autocast, compute_dtype, resolve_precision


@dataclass(frozen=True)
class MixedPrecision:
    """A resolved precision on one device type."""

    precision: str
    """fp32 | fp16 | bf16, resolved (never None)."""
    device_type: str
    """cpu | cuda: where autocast and the GradScaler act."""

    @property
    def scaled(self) -> bool:
        """Whether the loss is scaled (fp16 only: bf16 has float32's exponent range)."""
        return self.precision == "fp16"

    def autocast(self) -> AbstractContextManager[object]:
        return autocast(self.precision, self.device_type)

    def grad_scaler(self) -> torch.amp.GradScaler:
        """A GradScaler for this device, enabled only for fp16 (a disabled one passes through)."""

        return torch.amp.GradScaler(self.device_type, enabled=self.scaled)


def mixed_precision(precision: str | None, device: torch.device | str) -> MixedPrecision:
    """The setting resolved for `device` (None: fp16 on CUDA, fp32 elsewhere)."""
    resolved = resolve_precision(precision, device)
    device_type = getattr(device, "type", None) or str(device).split(":")[0]
    return MixedPrecision(resolved, device_type)


def cast_for_training(model: torch.nn.Module, precision: str) -> torch.nn.Module:
    """Frozen weights in the setting's dtype, trainable weights in float32 (GradScaler needs
    float32 master weights, and AdamW's update of a float16 LoRA weight would round away).
    In place; returns the model."""

    frozen = compute_dtype(precision)
    for p in model.parameters():
        want = torch.float32 if p.requires_grad else frozen
        if p.dtype != want and p.is_floating_point():
            p.data = p.data.to(want)
    return model


@dataclass(frozen=True)
class StepResult:
    grad_norm: float
    """The gradients' norm before clipping (inf or nan on a skipped step)."""
    skipped: bool
    """No update was made: a gradient was inf or nan."""
    loss_scale: float | None
    """The GradScaler's scale after the step (None when the loss is not scaled)."""


def optimizer_step(optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler, params: list[torch.nn.Parameter],
                   max_grad_norm: float) -> StepResult:
    """Unscale, clip, step, update the scale.

    Skipped -- weights and optimizer state untouched -- when a gradient is inf or nan: by the
    GradScaler's own check in fp16 (it also halves the scale), by the gradient norm otherwise (a
    non-finite step would write nan into every weight). The caller advances its learning-rate
    schedule only on a step taken, so the schedule counts updates, as accelerate's does.
    """

    scaler.unscale_(optimizer)
    norm = float(torch.nn.utils.clip_grad_norm_(params, max_grad_norm))
    if scaler.is_enabled():
        before = scaler.get_scale()
        scaler.step(optimizer)  # skips optimizer.step when unscale_ found inf/nan
        scaler.update()
        # the scale falls only when inf/nan was found (it grows, or stays, otherwise)
        return StepResult(norm, scaler.get_scale() < before, float(scaler.get_scale()))
    if not math.isfinite(norm):
        return StepResult(norm, True, None)
    optimizer.step()
    return StepResult(norm, False, None)


def restore_scaler(scaler: torch.amp.GradScaler, state: dict[str, object]) -> None:
    """Load a checkpoint's GradScaler state; ValueError when the checkpoint holds none but the
    run scales its loss (a checkpoint written by another precision)."""
    if scaler.is_enabled() and not state:
        raise ValueError("the checkpoint has no GradScaler state (it was written by a run without fp16 "
                         "loss scaling), but this run uses fp16; resume with the run's own precision")
    scaler.load_state_dict(state)

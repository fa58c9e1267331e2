"""Numeric precision as a setting: fp32 | fp16 | bf16, shared by the policy and the trainers.

What each setting means, on any device:
- fp32: every weight float32, no autocast.
- fp16: frozen base weights float16, trainable weights float32 (LoRA adapters; every weight of
  full fine-tuning, as master weights), the forward under float16 autocast, and (in training) a
  GradScaler. This is the T4 path (a T4 has no bfloat16). On a CPU it runs the same code, slowly:
  a CPU without AVX512-FP16 multiplies float16 matrices in software.
- bf16: as fp16 with bfloat16, and no GradScaler (bfloat16 has float32's exponent range).

The default is fp16 on CUDA and fp32 elsewhere. Only this module turns a device into a
precision; everything else reads the resolved setting. torch is imported inside the functions:
the command line imports this module to list the choices, and must stay fast.
"""
from __future__ import annotations

import contextlib
from typing import Any, ContextManager, Literal

Precision = Literal["fp32", "fp16", "bf16"]
PRECISIONS: tuple[str, ...] = ("fp32", "fp16", "bf16")


class PrecisionError(ValueError):
    """A precision setting this device cannot run (the message says what to use instead)."""


def default_precision(device_type: str) -> str:
    """fp16 on CUDA (the T4 path), fp32 on anything else."""
    return "fp16" if device_type == "cuda" else "fp32"


def _device_type(device: Any) -> str:
    return getattr(device, "type", None) or str(device).split(":")[0]


def resolve_precision(precision: str | None, device: Any) -> str:
    """The setting to run with on `device` (a torch.device or "cpu" / "cuda[:N]"): `precision`
    checked, or the device's default when None."""
    device_type = _device_type(device)
    if precision is None:
        return default_precision(device_type)
    if precision not in PRECISIONS:
        raise PrecisionError(f"precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    if precision == "bf16" and device_type == "cuda":
        import torch  # noqa: PLC0415 - the configs import this module (PRECISIONS) when the command line starts

        if not torch.cuda.is_bf16_supported():
            name = torch.cuda.get_device_name()
            raise PrecisionError(f"precision bf16: {name} has no bfloat16 support (a T4 has none); "
                                 "use --precision fp16")
    return precision


def compute_dtype(precision: str) -> Any:
    """The torch dtype of frozen weights and autocast for a resolved setting."""
    import torch  # noqa: PLC0415 - the configs import this module (PRECISIONS) when the command line starts

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


def autocast(precision: str, device_type: str) -> ContextManager[Any]:
    """The forward's autocast for a resolved setting: none for fp32."""
    if precision == "fp32":
        return contextlib.nullcontext()
    import torch  # noqa: PLC0415 - the configs import this module (PRECISIONS) when the command line starts

    return torch.autocast(device_type, dtype=compute_dtype(precision))


def model_precision(model: Any) -> str:
    """The setting a loaded model's frozen weights say it was loaded in (fp32 when every weight
    is float32 or trainable: full fine-tuning keeps float32 master weights whatever the setting,
    so a caller that trains under autocast must pass its setting, not rely on this)."""
    import torch  # noqa: PLC0415 - the configs import this module (PRECISIONS) when the command line starts

    by_dtype = {torch.float16: "fp16", torch.bfloat16: "bf16"}
    for p in model.parameters():
        if not p.requires_grad and p.dtype in by_dtype:
            return by_dtype[p.dtype]
    return "fp32"

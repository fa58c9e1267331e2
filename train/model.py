"""Loading and saving the trainable model: a new LoRA adapter, an existing one loaded trainable,
or full fine-tuning; and the KL reference without a second model.

Precision is a setting (`fixrl.harness.model.precision`: fp32 | fp16 | bf16, by default fp16 on CUDA
and fp32 elsewhere): frozen base weights in its dtype, trainable weights in float32
(`train.precision.cast_for_training`); the trainers run the forward under its autocast.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

import torch
from peft import LoraConfig, get_peft_model

from fixrl.harness.model import dirs, load
from fixrl.harness.model.precision import PrecisionError, compute_dtype, resolve_precision
from fixrl.train.config import ALL_LINEAR, LoRAConfig
from fixrl.train.errors import ModelError
from fixrl.train.precision import cast_for_training


def check_model_dir(path: str | Path) -> Path:
    """`harness.model.dirs.check_model_dir`, its error a ModelError."""
    try:
        return dirs.check_model_dir(path)
    except dirs.CheckpointError as e:
        raise ModelError(str(e)) from None


def check_adapter_dir(path: str | Path) -> Path:
    """`harness.model.dirs.check_adapter_dir`, its error a ModelError."""
    try:
        return dirs.check_adapter_dir(path)
    except dirs.CheckpointError as e:
        raise ModelError(str(e)) from None


def pick_device(device: str | None) -> Any:
    """`harness.model.load.pick_device`, its error a ModelError."""
    try:
        return load.pick_device(device)
    except load.DeviceError as e:
        raise ModelError(str(e)) from None


def load_trainable(model_path: str | Path, adapter: str | Path | None, lora: LoRAConfig,
                   device: str | None = None, precision: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer): the base model with its trainable part (`make_trainable`), its
    weights in `precision`'s dtypes (None: fp16 on CUDA, fp32 elsewhere)."""


    path = check_model_dir(model_path)
    dev = pick_device(device)
    if lora.full_finetune and adapter is not None:
        raise ModelError("--full trains every weight and cannot start from a LoRA adapter (--adapter); "
                         "merge the adapter into a model directory first, or drop --full")
    try:
        precision = resolve_precision(precision, dev)
    except PrecisionError as e:
        raise ModelError(str(e)) from None
    # full fine-tuning trains every weight, all float32 master weights: load them so
    model, tokenizer = load.load_base(path, compute_dtype("fp32" if lora.full_finetune else precision))
    return make_trainable(model, adapter, lora, dev, precision), tokenizer


def make_trainable(model: Any, adapter: str | Path | None, lora: LoRAConfig, device: Any, precision: str) -> Any:
    """The loaded base `model` with its trainable part, on `device`, cast for `precision` (a
    resolved setting): frozen weights in its dtype, trainable ones float32.

    adapter given: that peft adapter loaded trainable (`is_trainable=True`); else a new LoRA
    adapter from `lora` (rank, alpha, dropout, target modules; "all-linear" = every linear
    layer but the output head); or, with `lora.full_finetune`, every weight trainable.
    """

    if lora.full_finetune:
        model.requires_grad_(True)
    elif adapter is not None:
        check_adapter_dir(adapter)
        model = load.load_adapter(model, adapter, trainable=True)
    else:
        targets = lora.lora_target_modules
        peft_cfg = LoraConfig(r=lora.lora_rank, lora_alpha=lora.lora_alpha, lora_dropout=lora.lora_dropout,
                              target_modules=targets if targets != ALL_LINEAR else "all-linear",
                              task_type="CAUSAL_LM")
        model = get_peft_model(model, peft_cfg)
    model.to(device)
    cast_for_training(model, precision)
    if not any(p.requires_grad for p in model.parameters()):
        raise ModelError("the model has no trainable weights (was the adapter loaded for inference only?)")
    return model


def is_peft(model: Any) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "get_base_model")


def trainable_parameters(model: Any) -> list[Any]:
    return [p for p in model.parameters() if p.requires_grad]


def save_trainable(model: Any, tokenizer: Any, path: Path) -> Path:
    """A peft adapter directory (adapter_config.json + adapter_model.safetensors), loadable by
    `PeftModel.from_pretrained`; for full fine-tuning a complete checkpoint with its tokenizer."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    if not is_peft(model):
        tokenizer.save_pretrained(path)
    return path


def trainable_state(model: Any) -> dict[str, Any]:
    """Copies of the trainable weights by name (small for LoRA)."""
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


class Reference:
    """The KL reference policy without a second model.

    - "base": the base weights, through peft's `disable_adapter()` (a new adapter: the start
      policy is the base model);
    - "adapter": a frozen copy of the starting adapter's weights, swapped into the live adapter
      for the no-grad reference forward and swapped back after (an SFT adapter start).
    Full fine-tuning has no reference short of a second full model, which fixrl refuses.
    """

    def __init__(self, model: Any, mode: str, weights: dict[str, Any] | None = None) -> None:
        if not is_peft(model):
            raise ModelError("beta > 0 (a KL reference) needs a LoRA model: with full fine-tuning the "
                             "reference would be a second full model")
        if mode not in ("base", "adapter"):
            raise ValueError(f"reference mode {mode!r}")
        self.model, self.mode = model, mode
        self.weights = weights if weights is not None else (trainable_state(model) if mode == "adapter" else None)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        if self.mode == "base":
            with self.model.disable_adapter():
                yield
            return
        params = dict(self.model.named_parameters())
        current = {n: params[n].detach().clone() for n in self.weights}
        try:
            with torch.no_grad():
                for n, w in self.weights.items():
                    params[n].copy_(w)
            yield
        finally:
            with torch.no_grad():
                for n, w in current.items():
                    params[n].copy_(w)

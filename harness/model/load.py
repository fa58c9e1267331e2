"""The one loader of a causal LM and its tokenizer from a checkpoint directory, and of a peft
adapter over it, used by the HF policy (inference) and the trainers (trainable).

Both check their directory first (`dirs`), so a wrong path says what is wrong before torch
reads a byte. Precision is the caller's: it passes the dtype (`precision.compute_dtype`). What
this does not do: move the model to a device, make weights trainable or cast them for training
(the trainer's `make_trainable` does).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer

from fixrl.harness.model.dirs import check_adapter_dir, check_model_dir


class DeviceError(ValueError):
    """A device this machine does not have (the message says what to use instead)."""


def pick_device(device: str | None) -> torch.device:
    """`device` as a torch.device; None: CUDA when present, else the CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceError(f"device {device!r} requested but CUDA is not available (use --device cpu)")
    return torch.device(device)


def load_base(path: str | Path, dtype: Any) -> tuple[Any, Any]:
    """(model, tokenizer) of the checkpoint directory `path` (checked), the weights in `dtype`,
    on the CPU."""
    path = check_model_dir(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    return model, tokenizer


def load_adapter(model: Any, adapter: str | Path, *, trainable: bool) -> Any:
    """The peft adapter directory `adapter` (checked) loaded over `model`."""
    return PeftModel.from_pretrained(model, str(check_adapter_dir(adapter)), is_trainable=trainable)

"""The checks that a directory holds a checkpoint or a peft adapter, run before anything heavy
loads: the policy's config, the HF policy and the trainers all call these (one wording for all).

A check says what is missing and how to make it; it does not say the weights load (a directory
can pass and still hold a model transformers cannot read: that error comes from the loader).
"""
from __future__ import annotations

from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
"""Any one of these (or a `*.tiktoken` rank file) makes a tokenizer transformers can load."""


class CheckpointError(FileNotFoundError):
    """A model or adapter directory that is missing or not of its kind. The message starts with
    the path, so a caller can prefix the flag that named it (`--model DIR: ...`)."""


def check_model_dir(path: str | Path) -> Path:
    """`path` as a Path when it is a transformers checkpoint directory with its tokenizer;
    CheckpointError otherwise."""
    p = Path(path)
    if not p.is_dir():
        raise CheckpointError(f"{p}: no such directory (model directory {p} does not exist; give a local checkpoint "
                              "directory, e.g. one made by `fixrl init-tiny DIR` or a Qwen2.5-Instruct download; "
                              "nothing is downloaded)")
    if not (p / "config.json").is_file():
        raise CheckpointError(f"{p}: no config.json there; not a transformers checkpoint directory")
    if not any((p / f).is_file() for f in TOKENIZER_FILES) and not any(p.glob("*.tiktoken")):
        raise CheckpointError(f"{p}: has no tokenizer: no tokenizer files there ({' / '.join(TOKENIZER_FILES)}); save "
                              f"the model's tokenizer next to its weights with tokenizer.save_pretrained('{p}') "
                              "(fixrl needs the model's own chat template)")
    return p


def check_adapter_dir(path: str | Path) -> Path:
    """`path` as a Path when it is a peft adapter directory; CheckpointError otherwise."""
    p = Path(path)
    if not p.is_dir():
        raise CheckpointError(f"{p}: no such directory (adapter directory {p} does not exist; give a peft adapter "
                              "directory written by `fixrl sft` or `fixrl grpo`)")
    if not (p / "adapter_config.json").is_file():
        raise CheckpointError(f"{p}: no adapter_config.json there; not a peft adapter directory")
    return p

"""One set of checkpoint directory checks: the policy's config, the HF policy and the trainer
say the same thing about the same directory, each as its own error type."""
from __future__ import annotations

import pytest

from fixrl.harness.agent.policies import PolicyConfig, PolicyError
from fixrl.harness.model.dirs import CheckpointError, check_adapter_dir, check_model_dir


def _reason(e: BaseException) -> str:
    return str(e).split(": ", 1)[1]


def test_every_caller_gives_the_same_reason(tmp_path):
    pytest.importorskip("torch")
    from fixrl.train.model import ModelError
    from fixrl.train.model import check_model_dir as train_check

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    with pytest.raises(CheckpointError) as base:
        check_model_dir(model)
    with pytest.raises(PolicyError) as policy:
        PolicyConfig(model=str(model)).check()
    with pytest.raises(ModelError) as train:
        train_check(model)
    assert "no tokenizer files there" in str(base.value)
    assert str(policy.value) == f"--model {base.value}"
    assert _reason(train.value) == _reason(base.value)
    (model / "qwen.tiktoken").write_text("")   # a tiktoken rank file is a tokenizer too
    assert check_model_dir(model) == model


def test_adapter_dirs(tmp_path):
    with pytest.raises(CheckpointError, match="no such directory"):
        check_adapter_dir(tmp_path / "missing")
    with pytest.raises(CheckpointError, match="adapter_config.json"):
        check_adapter_dir(tmp_path)
    (tmp_path / "adapter_config.json").write_text("{}")
    assert check_adapter_dir(str(tmp_path)) == tmp_path

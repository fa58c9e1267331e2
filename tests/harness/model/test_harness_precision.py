"""The precision setting: defaults by device, refusals with a way out, the autocast it opens,
and a loaded model's precision read back from its frozen weights."""
from __future__ import annotations

import pytest
import torch

from fixrl.harness.model.precision import (
    PRECISIONS,
    PrecisionError,
    autocast,
    compute_dtype,
    model_precision,
    resolve_precision,
)


def test_defaults_by_device_and_explicit_settings():
    assert resolve_precision(None, "cpu") == "fp32"
    assert resolve_precision(None, torch.device("cpu")) == "fp32"
    assert resolve_precision(None, "cuda:1") == "fp16"  # the T4 path; resolving touches no GPU
    for p in PRECISIONS:
        assert resolve_precision(p, "cpu") == p
    assert [compute_dtype(p) for p in PRECISIONS] == [torch.float32, torch.float16, torch.bfloat16]
    with pytest.raises(PrecisionError, match="fp32, fp16, bf16"):
        resolve_precision("fp8", "cpu")


def test_bf16_on_a_gpu_without_it_names_fp16(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: "Tesla T4")
    with pytest.raises(PrecisionError, match=r"Tesla T4 has no bfloat16.*--precision fp16"):
        resolve_precision("bf16", "cuda")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_precision("bf16", "cuda") == "bf16"


@pytest.mark.parametrize("precision", PRECISIONS)
def test_autocast_matches_the_setting(precision):
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    with autocast(precision, "cpu"):
        assert torch.is_autocast_enabled("cpu") is (precision != "fp32")
        out = a @ b
    assert out.dtype == compute_dtype(precision)
    assert not torch.is_autocast_enabled("cpu")


def test_model_precision_reads_the_frozen_weights():
    net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    assert model_precision(net) == "fp32"
    net[0].half().requires_grad_(False)
    assert model_precision(net) == "fp16"
    net[0].bfloat16()
    assert model_precision(net) == "bf16"
    net[0].requires_grad_(True)  # every half weight trainable: nothing says the setting
    assert model_precision(net) == "fp32"


def test_a_policy_loads_and_generates_in_the_setting(tiny_model):
    """`fixrl eval --precision`: the model's weights in the setting's dtype, generation in it (the
    KV cache an episode keeps is half precision), and the eval record names the setting."""
    from fixrl.harness.agent.policies import GenRequest, PolicyConfig

    cfg = PolicyConfig(model=str(tiny_model), max_new_tokens=4, precision="fp16")
    policy, desc = cfg.load(), cfg.describe()
    assert policy.precision == desc["precision"] == "fp16"
    assert {p.dtype for p in policy.model.parameters()} == {torch.float16}
    state = policy.start(None, None, 0)
    [gen] = policy.generate([GenRequest(prompt_ids=[151644, 872, 198, 9707], max_new_tokens=4, state=state)])
    assert len(gen.token_ids) == len(gen.logprobs) >= 1 and all(lp < 0 for lp in gen.logprobs)
    assert state.kv and state.kv[0][0].dtype == torch.float16
    assert PolicyConfig(model=str(tiny_model), max_new_tokens=4).load().precision == "fp32"  # the CPU default

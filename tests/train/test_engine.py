"""The engine setting without a server: truncated importance sampling, the config's refusals,
the policy config's checks (the server-backed paths are in test_grpo_vllm.py and
tests/harness/agent/test_vllm_engine.py)."""
from __future__ import annotations

import math

import pytest
import torch

from fixrl.harness.agent.policies import PolicyConfig, PolicyError
from fixrl.train.engine import sampler_logprobs, tis_weights
from fixrl.train.losses import policy_loss
from fixrl.train.resolve import make_config


def test_tis_weights_cap_the_ratio_and_measure_the_gap():
    old = torch.tensor([[0.0, -1.0, -2.0, -0.5]])
    sampler = torch.tensor([[0.0, -1.5, -0.5, -3.0]])
    mask = torch.tensor([[0, 1, 1, 1]])
    w, stats = tis_weights(old, sampler, mask, cap=2.0)
    # exp(0.5) = 1.65 kept, exp(-1.5) = 0.22 kept, exp(2.5) = 12.2 capped at 2; 1 off the mask
    assert w.tolist()[0] == pytest.approx([1.0, math.exp(0.5), math.exp(-1.5), 2.0])
    assert stats == pytest.approx({"tokens": 3.0, "gap_abs_sum": 4.5, "gap_max": 2.5, "capped": 1.0})


def test_is_weights_scale_the_surrogate_not_the_kl():
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    mask = torch.ones(1, 2)
    adv = torch.tensor([1.0])
    plain, _ = policy_loss(logp, logp.detach(), adv, mask, loss_type="dapo")
    half, _ = policy_loss(logp, logp.detach(), adv, mask, loss_type="dapo", is_weights=torch.full((1, 2), 0.5))
    assert float(half.detach()) == pytest.approx(0.5 * float(plain.detach()))
    ref = torch.tensor([[-1.5, -2.5]])
    with_kl, _ = policy_loss(logp, logp.detach(), adv, mask, loss_type="dapo", ref_logp=ref, beta=1.0,
                             is_weights=torch.full((1, 2), 0.5))
    kl_only = float(with_kl.detach()) - float(half.detach())
    full_kl, _ = policy_loss(logp, logp.detach(), adv, mask, loss_type="dapo", ref_logp=ref, beta=1.0)
    assert kl_only == pytest.approx(float(full_kl.detach()) - float(plain.detach()))


def test_sampler_logprobs_pad_and_cut_to_the_width():
    class T:
        def __init__(self, lps):
            self.sampler_logprobs = lps

    out = sampler_logprobs([T([0.0, -1.0, -2.0]), T([])], width=2, device="cpu")
    assert out.tolist() == [[0.0, -1.0], [0.0, 0.0]]


def test_grpo_engine_settings_are_checked():
    cfg = make_config("dynamic_mean", engine="vllm")
    assert cfg.vllm_importance_sampling_correction is True and cfg.vllm_importance_sampling_cap == 2.0
    with pytest.raises(ValueError, match="full_finetune has no adapter"):
        make_config("dynamic_mean", engine="vllm", full_finetune=True)
    with pytest.raises(ValueError, match="vllm_importance_sampling_cap"):
        make_config("dynamic_mean", engine="vllm", vllm_importance_sampling_cap=0.0)
    with pytest.raises(ValueError, match="vllm_url"):
        make_config("dynamic_mean", vllm_url="http://127.0.0.1:1")


def test_policy_config_engine_errors(tiny_model, tmp_path):
    with pytest.raises(PolicyError, match="scripted --policy samples nothing"):
        PolicyConfig(policy="oracle", engine="vllm").check()
    with pytest.raises(PolicyError, match="--vllm-url goes with --engine vllm"):
        PolicyConfig(model=str(tiny_model), vllm_url="http://127.0.0.1:1").check()
    missing = tmp_path / "no-venv" / "python"
    with pytest.raises(PolicyError, match="make vllm"):
        PolicyConfig(model=str(tiny_model), engine="vllm", vllm_python=str(missing)).load()
    with pytest.raises(PolicyError, match="no answer"):
        PolicyConfig(model=str(tiny_model), engine="vllm", vllm_url="http://127.0.0.1:9").load()

"""The GRPO update on a tiny model without sandboxes: several minibatches (old log-probs from
the trainer's own forward, the clip at work), the KL reference without a second model, and
Ctrl-C held until an update is complete."""
from __future__ import annotations

import os
import signal
from types import SimpleNamespace

import pytest
import torch

from fixrl.harness.agent.trajectory import Trajectory
from fixrl.train.grpo import Learner, deferred_interrupt, grpo_update
from fixrl.train.model import Reference
from fixrl.train.resolve import make_config, resolve


def tiny_peft(seed=0):
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    return get_peft_model(Qwen2ForCausalLM(cfg), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear",
                                                          init_lora_weights=False))


def fake_groups(n_groups=2, G=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    groups = []
    for gi in range(n_groups):
        group = []
        for k in range(G):
            n = 40 + 7 * k
            ids = torch.randint(0, 300, (n,), generator=g).tolist()
            mask = [0] * 10 + [1] * 8 + [0] * 10 + [1] * (n - 28)
            group.append(Trajectory(task_id=f"t{gi}", token_ids=ids, assistant_mask=mask, group=gi,
                                    reward=float(k % 2), info={"turns": 2, "outcome": "pass" if k % 2 else "fail"}))
        groups.append(group)
    return groups


def learner(model, cfg, reference=None):
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.learning_rate)
    return Learner(model, SimpleNamespace(pad_token_id=0), opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0),
                   torch.amp.GradScaler("cuda", enabled=False), reference)


def test_single_on_policy_update_never_clips():
    model = tiny_peft()
    cfg = resolve(make_config("dynamic_mean", learning_rate=1e-2))
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    m, adv = grpo_update(learner(model, cfg), fake_groups(), cfg, step=1)
    assert m["train/optimizer_steps"] == 1 and m["loss/clip_frac"] == 0.0 and m["approx_kl"] == 0.0
    assert m["loss/ratio_min"] == m["loss/ratio_max"] == 1.0 and m["entropy"] > 0
    assert adv == pytest.approx([-0.5 / 1.5 * 1.0, 2 / 3, -1 / 3] * 2)  # rewards [0, 1, 0]: mean 1/3
    assert any(not torch.equal(before[n], p) for n, p in model.named_parameters() if p.requires_grad)


def test_minibatches_clip_against_recomputed_old_logprobs():
    model = tiny_peft()
    cfg = resolve(make_config("dapo", learning_rate=5e-2, steps_per_generation=2, num_iterations=2, overlong_buffer=0))
    m, _ = grpo_update(learner(model, cfg), fake_groups(), cfg, step=1)
    assert m["train/optimizer_steps"] == 4
    # after the first step the policy moved away from pi_old: ratios leave 1, the clip binds
    assert m["approx_kl"] > 0 and m["loss/ratio_max"] > 1.0 and m["loss/clip_frac"] > 0


def test_kl_reference_from_base_weights_and_from_a_frozen_adapter():
    from fixrl.train.logprobs import reply_log_probs

    model = tiny_peft()
    ids = torch.randint(0, 300, (1, 30), generator=torch.Generator().manual_seed(1))
    mask = torch.zeros(1, 30, dtype=torch.long)
    mask[0, 10:30] = 1
    with torch.no_grad():
        start = reply_log_probs(model, ids, mask)
        with model.disable_adapter():
            base = reply_log_probs(model, ids, mask)
    ref_adapter, ref_base = Reference(model, "adapter"), Reference(model, "base")
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.1)
        moved = reply_log_probs(model, ids, mask)
        with ref_adapter.active():
            assert torch.equal(reply_log_probs(model, ids, mask), start)
        with ref_base.active():
            assert torch.equal(reply_log_probs(model, ids, mask), base)
        assert torch.equal(reply_log_probs(model, ids, mask), moved)  # swapped back
    assert not torch.equal(moved, start)
    # in the update: beta > 0 adds kl_ref, zero at the first step (policy = reference), then > 0
    cfg = resolve(make_config("grpo", learning_rate=5e-2, minibatches=2))  # an earlier name of steps_per_generation
    model = tiny_peft()
    m, _ = grpo_update(learner(model, cfg, Reference(model, "adapter")), fake_groups(), cfg, 1)
    assert m["kl_ref"] > 0
    with pytest.raises(ValueError, match="second full model"):
        from transformers import Qwen2Config, Qwen2ForCausalLM

        Reference(Qwen2ForCausalLM(Qwen2Config(vocab_size=50, hidden_size=16, intermediate_size=16,
                                               num_hidden_layers=1, num_attention_heads=2,
                                               num_key_value_heads=1)), "base")


def test_ctrl_c_waits_for_the_update():
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when the tests run as a background job
    done = []
    with pytest.raises(KeyboardInterrupt), deferred_interrupt():
        os.kill(os.getpid(), signal.SIGINT)
        done.append("finished")
    assert done == ["finished"]
    assert signal.getsignal(signal.SIGINT) is before

"""Hand-computed advantages and losses (issue 6's list), and masking at the loss."""
from __future__ import annotations

import math

import pytest
import torch

from fixrl.train.advantages import compute_advantages, overlong_shaping, uniform_groups
from fixrl.train.losses import aggregate, clipped_surrogate, importance_log_ratio, kl_estimate, policy_loss


def test_group_advantages_hand_computed():
    r = torch.tensor([1.0, 0.0, 0.0, 1.0])
    g = torch.zeros(4, dtype=torch.long)
    # mean 0.5, population std 0.5 -> +-1 (the unbiased std, 0.577, would give +-0.866)
    assert torch.allclose(compute_advantages(r, g, "group"), torch.tensor([1.0, -1, -1, 1]), atol=1e-5)
    assert torch.equal(compute_advantages(r, g, "none"), torch.tensor([0.5, -0.5, -0.5, 0.5]))
    # leave-one-out: 1 - 1/3 and 0 - 2/3
    assert torch.allclose(compute_advantages(r, g, "rloo"), torch.tensor([2 / 3, -2 / 3, -2 / 3, 2 / 3]))
    # uniform groups give exactly zero under every mode
    for mode in ("none", "group", "rloo"):
        assert torch.equal(compute_advantages(torch.ones(6), torch.zeros(6, dtype=torch.long), mode), torch.zeros(6))
    with pytest.raises(ValueError, match="scale_rewards"):
        compute_advantages(r, g, "std")


def test_ragged_groups_and_seven_to_one():
    # group 7 lost two episodes to errors; group 3 is [1]*7 + [0]
    r = torch.tensor([1.0, 0.0, 1.0] + [1.0] * 7 + [0.0])
    g = torch.tensor([7, 7, 7] + [3] * 8)
    a = compute_advantages(r, g, "none")
    assert torch.allclose(a[:3], torch.tensor([1 / 3, -2 / 3, 1 / 3]))
    assert torch.allclose(a[3:], torch.tensor([0.125] * 7 + [-0.875]))
    std = math.sqrt(0.875 * 0.125)  # 0.331
    assert torch.allclose(compute_advantages(r, g, "group")[-1], torch.tensor(-0.875 / std), atol=1e-4)
    assert uniform_groups(torch.tensor([1.0, 1, 0, 0, 0.5, 1]), torch.tensor([0, 0, 1, 1, 2, 2])) == (3, 1, 1)


def test_overlong_shaping():
    r = torch.ones(6)
    turns = torch.tensor([1, 2, 3, 4, 5, 6])
    shaped = overlong_shaping(r, turns, max_turns=6, buffer=2)
    assert torch.equal(shaped, torch.tensor([1.0, 1, 1, 1, 0.5, 0.0]))
    assert torch.equal(overlong_shaping(r, turns, 6, 0), r)


def lengths_batch():
    """A 4-token sequence with A = +1 and a 1-token sequence with A = -1, identical policies."""
    mask = torch.tensor([[1, 1, 1, 1], [1, 0, 0, 0]])
    logp = torch.full((2, 4), -1.0, requires_grad=True)
    return logp, mask, torch.tensor([1.0, -1.0])


def test_token_mean_vs_sequence_mean():
    logp, mask, adv = lengths_batch()
    # ratio 1 everywhere: per-token loss = -A: four tokens of -1 and one of +1
    tm, _ = policy_loss(logp, logp.detach(), adv, mask, loss_type="token_mean")
    sm, _ = policy_loss(logp, logp.detach(), adv, mask, loss_type="seq_mean_token_mean")
    assert tm.item() == pytest.approx(-3 / 5)
    assert sm.item() == pytest.approx(0.0)
    st, _ = policy_loss(logp, logp.detach(), adv, mask, loss_type="seq_mean_token_sum")
    assert st.item() == pytest.approx((-4 + 1) / 2)
    c, _ = policy_loss(logp, logp.detach(), adv, mask, loss_type="constant", constant=10)
    assert c.item() == pytest.approx(-3 / 20)
    # at ratio 1 the gradient is REINFORCE's: -A / 5 per token under token_mean
    (grad,) = torch.autograd.grad(tm, logp)
    assert torch.allclose(grad, torch.tensor([[-0.2, -0.2, -0.2, -0.2], [0.2, 0, 0, 0]]))


def test_micro_batches_add_up_to_the_batch():
    torch.manual_seed(0)
    logp = torch.randn(4, 6)
    old = logp + 0.1 * torch.randn(4, 6)
    mask = (torch.rand(4, 6) > 0.3).long()
    mask[:, 0] = 1
    adv = torch.tensor([0.5, -0.5, 1.0, -1.0])
    for lt in ("token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "constant"):
        kw = dict(loss_type=lt, constant=8, num_seqs=4, num_tokens=int(mask.sum()))
        whole, _ = policy_loss(logp, old, adv, mask, **kw)
        parts = sum(policy_loss(logp[i:i + 1], old[i:i + 1], adv[i:i + 1], mask[i:i + 1], **kw)[0] for i in range(4))
        assert whole.item() == pytest.approx(parts.item(), abs=1e-6), lt


def test_masked_positions_change_nothing():
    """Changing a tool-result position's log-prob (or old log-prob) changes neither the loss
    nor the gradient: only assistant tokens count."""
    torch.manual_seed(1)
    mask = torch.tensor([[0, 1, 1, 0, 0, 1], [0, 0, 1, 1, 1, 0]])
    base = torch.randn(2, 6)
    adv = torch.tensor([1.0, -0.5])
    old = base + 0.05

    def run(lp_values, old_values):
        lp = lp_values.clone().requires_grad_(True)
        loss, _ = policy_loss(lp, old_values, adv, mask, epsilon=0.2, ref_logp=old_values, beta=0.1)
        (g,) = torch.autograd.grad(loss, lp)
        return loss.detach(), g

    loss1, g1 = run(base, old)
    poked, poked_old = base.clone(), old.clone()
    poked[0, 3] = 50.0  # a tool-result token's log-prob
    poked_old[1, 0] = -80.0
    loss2, g2 = run(poked, poked_old)
    assert torch.equal(loss1, loss2) and torch.equal(g1, g2)
    assert (g1[mask == 0] == 0).all() and (g1[mask == 1] != 0).all()


@pytest.mark.parametrize("adv,ratio", [(1.0, 1.5), (-1.0, 0.7)])
def test_clipped_ratio_has_zero_gradient(adv, ratio):
    mask = torch.ones(1, 3, dtype=torch.long)
    old = torch.full((1, 3), -2.0)
    logp = (old + math.log(ratio)).requires_grad_(True)
    loss, stats = policy_loss(logp, old, torch.tensor([adv]), mask, epsilon=0.2)
    (g,) = torch.autograd.grad(loss, logp)
    assert torch.equal(g, torch.zeros_like(g))
    assert stats.means()["loss/clip_frac"] == 1.0
    # the clipped constant is what the loss holds: -(1 +- eps) * A
    assert loss.item() == pytest.approx(-(1.2 if adv > 0 else 0.8) * adv)
    # inside the band, or on the pessimistic side, the gradient survives
    logp2 = (old + math.log(1.1)).requires_grad_(True)
    (g2,) = torch.autograd.grad(policy_loss(logp2, old, torch.tensor([adv]), mask, epsilon=0.2)[0], logp2)
    assert (g2 != 0).all()


def test_clip_higher():
    obj, clipped = clipped_surrogate(torch.log(torch.tensor([[1.25]])), torch.tensor([1.0]), 0.2, 0.28)
    assert not clipped.any() and obj.item() == pytest.approx(1.25)
    obj, clipped = clipped_surrogate(torch.log(torch.tensor([[1.3]])), torch.tensor([1.0]), 0.2, 0.28)
    assert clipped.all() and obj.item() == pytest.approx(1.28)


def test_gspo_sequence_ratio():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    old = torch.zeros(2, 4)
    logp = torch.tensor([[0.3, -0.1, 0.1, 9.0], [0.2, 0.4, 5.0, 5.0]], requires_grad=True)
    lr = importance_log_ratio(logp, old, mask, "sequence")
    # geometric mean of the token ratios over each sequence's own tokens: exp(0.1), exp(0.3)
    assert torch.allclose(lr[0], torch.full((4,), 0.1)) and torch.allclose(lr[1], torch.full((4,), 0.3))
    loss, stats = policy_loss(logp, old, torch.tensor([1.0, 1.0]), mask, level="sequence", epsilon=3e-4,
                              epsilon_high=4e-4, loss_type="seq_mean_token_mean")
    # both sequence ratios exceed 1 + 4e-4 with A > 0: clipped, value -(1 + 4e-4), no gradient
    assert loss.item() == pytest.approx(-(1 + 4e-4))
    assert stats.means()["loss/clip_frac"] == 1.0
    (g,) = torch.autograd.grad(loss, logp)
    assert torch.equal(g, torch.zeros_like(g))
    # unclipped: every token of a sequence gets the sequence's gradient share, d/dlogp = s_i * A / n_i / B
    logp_small = torch.tensor([[1e-5, -1e-5, 0.0, 0.0]], requires_grad=True)
    loss, _ = policy_loss(logp_small, torch.zeros(1, 4), torch.tensor([1.0]), mask[:1], level="sequence",
                          epsilon=3e-4, epsilon_high=4e-4, loss_type="seq_mean_token_mean")
    (g,) = torch.autograd.grad(loss, logp_small)
    assert torch.allclose(g[0, :3], torch.full((3,), -1 / 3), atol=1e-6) and g[0, 3] == 0


def test_kl_estimators():
    logp = torch.log(torch.tensor([[0.5, 0.25]]))
    ref = torch.log(torch.tensor([[0.25, 0.5]]))
    lr = ref - logp  # log(ref/pi) = [-ln 2, ln 2]
    assert torch.allclose(kl_estimate(logp, ref, "k1"), -lr)
    assert torch.allclose(kl_estimate(logp, ref, "k2"), 0.5 * lr ** 2)
    assert torch.allclose(kl_estimate(logp, ref, "k3"), torch.tensor([[0.5 - 1 + math.log(2), 2 - 1 - math.log(2)]]))
    assert torch.equal(kl_estimate(logp, logp, "k3"), torch.zeros(1, 2))
    # with beta the KL adds to the loss; k3 > 0 away from the reference
    mask = torch.ones(1, 2, dtype=torch.long)
    base, _ = policy_loss(logp, logp, torch.tensor([0.0]), mask)
    with_kl, stats = policy_loss(logp, logp, torch.tensor([0.0]), mask, ref_logp=ref, beta=0.5)
    assert with_kl.item() == pytest.approx(base.item() + 0.5 * kl_estimate(logp, ref, "k3").mean().item())
    assert stats.means()["kl_ref"] > 0
    with pytest.raises(ValueError, match="kl_estimator"):
        kl_estimate(logp, ref, "k4")
    with pytest.raises(ValueError, match="loss_type"):
        aggregate(logp, mask, "sum")

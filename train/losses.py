"""The policy loss: clipped importance ratio (token or sequence level), KL to a reference,
and the aggregation over tokens.

Shapes: B trajectories, T token positions aligned with `token_ids`; `mask` [B, T] is 1 exactly
on tokens the policy sampled (the assistant mask), so tool results and prompts contribute
nothing. log-probs at masked-out positions may hold anything (they are never read).

The aggregation takes its normalisers (total sequences, total tokens) as arguments, so a batch
can be processed one micro-batch at a time and the summed micro-batch losses equal the loss
of the whole batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from fixrl.train.resolve import canonical_loss_type


def kl_estimate(logp: Tensor, ref_logp: Tensor, kind: str = "k3") -> Tensor:
    """Per-token estimate of KL(pi || pi_ref) on tokens sampled from pi: [B, T] -> [B, T].

    With l = log pi_ref - log pi: k1 = -l (unbiased, can be negative), k2 = l^2 / 2,
    k3 = e^l - 1 - l (unbiased, >= 0; Schulman's estimator, DeepSeekMath's choice).
    """
    log_ratio = ref_logp.detach() - logp  # [B, T]
    if kind == "k1":
        return -log_ratio
    if kind == "k2":
        return 0.5 * log_ratio ** 2
    if kind == "k3":
        return torch.expm1(log_ratio) - log_ratio
    raise ValueError(f"kl_estimator={kind!r}: expected 'k1', 'k2' or 'k3'")


def masked_mean(x: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    """Mean of x where mask is 1: [B, T] -> scalar (dim None) or [B] (dim=-1); 0 for empty."""
    m = mask.to(x.dtype)
    if dim is None:
        return (x * m).sum() / m.sum().clamp(min=1)
    return (x * m).sum(dim) / m.sum(dim).clamp(min=1)


def importance_log_ratio(logp: Tensor, old_logp: Tensor, mask: Tensor, level: str = "token") -> Tensor:
    """log(pi / pi_old) per token [B, T].

    "token": the per-token log-ratio (PPO, GRPO).
    "sequence": GSPO's length-normalised sequence log-ratio, mean_t log(pi/pi_old) over the
    sequence's policy tokens, broadcast to its tokens ([B, 1] -> [B, T]); every token then
    shares one ratio and one clip decision, and its gradient is the sequence's.
    """
    token = logp - old_logp.detach()  # [B, T]
    if level == "token":
        return token
    if level == "sequence":
        return masked_mean(token, mask, dim=-1)[:, None].expand_as(token)  # [B, T]
    raise ValueError(f"importance_sampling_level={level!r}: expected 'token' or 'sequence'")


def clipped_surrogate(log_ratio: Tensor, advantages: Tensor, epsilon: float,
                      epsilon_high: float) -> tuple[Tensor, Tensor]:
    """PPO's pessimistic objective per token and where the clip is active.

    log_ratio [B, T]; advantages [B] (one per trajectory, shared by its tokens)
    -> (objective [B, T] to maximise, clipped [B, T] bool).
    `clipped` marks tokens whose gradient the clip removes: ratio > 1 + epsilon_high with
    A > 0, or ratio < 1 - epsilon with A < 0.
    """
    ratio = log_ratio.exp()  # [B, T]
    adv = advantages.detach()[:, None].to(ratio.dtype)  # [B, 1]
    unclipped = ratio * adv  # [B, T]
    clipped_ratio = ratio.clamp(1.0 - epsilon, 1.0 + epsilon_high)  # [B, T]
    objective = torch.minimum(unclipped, clipped_ratio * adv)  # [B, T]
    with torch.no_grad():
        clipped = ((ratio > 1.0 + epsilon_high) & (adv > 0)) | ((ratio < 1.0 - epsilon) & (adv < 0))
    return objective, clipped


def aggregate(per_token: Tensor, mask: Tensor, loss_type: str = "dapo", *,
              num_seqs: int | None = None, num_tokens: int | None = None,
              constant: int | None = None, micro_batches: int = 1) -> Tensor:
    """Reduce a per-token loss [B, T] over the masked tokens to a scalar (TRL's loss types).

    "dapo":               sum / num_tokens (every policy token of the minibatch)
    "bnpo":               sum / this micro-batch's tokens / micro_batches (TRL: normalised over
                          the local batch only, so it depends on the micro-batch size)
    "grpo":               sum_i (sum_t / n_i) / num_seqs (DeepSeekMath)
    "dr_grpo":            sum / (num_seqs * constant) (Dr. GRPO)
    "seq_mean_token_sum": sum / num_seqs (RLOO: the episode is one action)
    Earlier names token_mean / seq_mean_token_mean / constant are dapo / grpo / dr_grpo.
    num_seqs / num_tokens default to this batch's; pass the whole minibatch's when `per_token`
    is one micro-batch of it (and `micro_batches`, the minibatch's count of them, for bnpo).
    """
    loss_type = canonical_loss_type(loss_type)
    m = mask.to(per_token.dtype)  # [B, T]
    num_seqs = per_token.shape[0] if num_seqs is None else num_seqs
    num_tokens = int(mask.sum()) if num_tokens is None else num_tokens
    masked = per_token * m  # [B, T]
    if loss_type == "dapo":
        return masked.sum() / max(num_tokens, 1)
    if loss_type == "bnpo":
        return masked.sum() / max(int(mask.sum()), 1) / max(micro_batches, 1)
    if loss_type == "grpo":
        return (masked.sum(-1) / m.sum(-1).clamp(min=1)).sum() / max(num_seqs, 1)
    if loss_type == "seq_mean_token_sum":
        return masked.sum() / max(num_seqs, 1)
    if loss_type == "dr_grpo":
        if not constant:
            raise ValueError("loss_type='dr_grpo' needs a positive constant (GRPOConfig.loss_constant)")
        return masked.sum() / (max(num_seqs, 1) * constant)
    raise ValueError(f"loss_type={loss_type!r}: expected grpo, bnpo, dr_grpo, dapo or seq_mean_token_sum")


@dataclass
class LossStats:
    """Sums over policy tokens (divide by `tokens` for means), so micro-batches add up."""

    tokens: float = 0.0
    clipped: float = 0.0
    approx_kl: float = 0.0
    kl_ref: float = 0.0
    ratio_min: float = float("inf")
    ratio_max: float = float("-inf")

    def add(self, other: LossStats) -> None:
        self.tokens += other.tokens
        self.clipped += other.clipped
        self.approx_kl += other.approx_kl
        self.kl_ref += other.kl_ref
        self.ratio_min = min(self.ratio_min, other.ratio_min)
        self.ratio_max = max(self.ratio_max, other.ratio_max)

    def means(self) -> dict[str, float]:
        n = max(self.tokens, 1.0)
        return {"loss/clip_frac": self.clipped / n, "approx_kl": self.approx_kl / n, "kl_ref": self.kl_ref / n,
                "loss/ratio_min": self.ratio_min if self.tokens else 1.0,
                "loss/ratio_max": self.ratio_max if self.tokens else 1.0}


def policy_loss(logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, *,
                loss_type: str = "dapo", epsilon: float = 0.2, epsilon_high: float | None = None,
                level: str = "token", ref_logp: Tensor | None = None, beta: float = 0.0,
                kl_estimator: str = "k3", num_seqs: int | None = None, num_tokens: int | None = None,
                constant: int | None = None, micro_batches: int = 1,
                is_weights: Tensor | None = None) -> tuple[Tensor, LossStats]:
    """The GRPO-family loss to minimise and its statistics.

    is_weights [B, T] or None: truncated importance sampling weights for an engine that sampled
    with other numerics than the trainer's (TRL's `vllm_importance_sampling_correction`:
    min(pi_old / pi_sampler, cap), no grad); they scale the clipped surrogate, not the KL term.

    logp [B, T] (with grad), old_logp [B, T] (the policy that sampled; pass logp.detach() for
    one on-policy update: the ratio is then exactly 1 and the loss's gradient is REINFORCE's
    with the group baseline), advantages [B], mask [B, T], ref_logp [B, T] or None.
    per-token loss = -min(rho A, clip(rho) A) + beta * KL_estimate, aggregated by loss_type.
    """
    epsilon_high = epsilon if epsilon_high is None else epsilon_high
    log_ratio = importance_log_ratio(logp, old_logp, mask, level)  # [B, T]
    objective, clipped = clipped_surrogate(log_ratio, advantages, epsilon, epsilon_high)  # [B, T]
    per_token = -objective  # [B, T]
    if is_weights is not None:
        per_token = per_token * is_weights.detach().to(per_token.dtype)
    kl = None
    if ref_logp is not None and beta > 0:
        kl = kl_estimate(logp, ref_logp, kl_estimator)  # [B, T]
        per_token = per_token + beta * kl
    loss = aggregate(per_token, mask, loss_type, num_seqs=num_seqs, num_tokens=num_tokens, constant=constant,
                     micro_batches=micro_batches)
    with torch.no_grad():
        m = mask.bool()
        token_log_ratio = (logp - old_logp).detach()  # [B, T]
        ratio = log_ratio.detach().exp()[m]  # [n]
        stats = LossStats(
            tokens=float(m.sum()),
            clipped=float(clipped[m].sum()),
            # k3 of pi_old vs pi on the sampled tokens: how far the update has moved the policy
            approx_kl=float((torch.expm1(-token_log_ratio) + token_log_ratio)[m].sum()),
            kl_ref=float(kl.detach()[m].sum()) if kl is not None else 0.0,
            ratio_min=float(ratio.min()) if ratio.numel() else float("inf"),
            ratio_max=float(ratio.max()) if ratio.numel() else float("-inf"),
        )
    return loss, stats

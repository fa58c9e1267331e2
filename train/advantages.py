"""Outcome advantages from group rewards: one number per episode, shared by all its tokens.

Groups may be ragged (errored episodes are dropped from their group before this runs), so the
functions take a flat reward vector and a group id per episode rather than a [groups, G] grid.
"""
from __future__ import annotations

import torch
from torch import Tensor


def group_stats(rewards: Tensor, groups: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per-episode mean, population std and size of its group.

    rewards: [N] float; groups: [N] int ids (any values) -> three [N] tensors.
    """
    _, inverse = torch.unique(groups, return_inverse=True)  # [N] dense ids 0..K-1
    k = int(inverse.max()) + 1 if len(inverse) else 0
    r = rewards.to(torch.float64)
    count = torch.zeros(k, dtype=torch.float64).index_add_(0, inverse, torch.ones_like(r))  # [K]
    total = torch.zeros(k, dtype=torch.float64).index_add_(0, inverse, r)  # [K]
    mean = total / count  # [K]
    sq = torch.zeros(k, dtype=torch.float64).index_add_(0, inverse, (r - mean[inverse]) ** 2)  # [K]
    std = (sq / count).sqrt()  # [K] population std (unbiased=False): [1,0,0,1] -> 0.5
    return mean[inverse].to(rewards.dtype), std[inverse].to(rewards.dtype), count[inverse].to(rewards.dtype)


def compute_advantages(rewards: Tensor, groups: Tensor, scale_rewards: str = "none",
                       baseline: str = "mean", eps: float = 1e-6) -> Tensor:
    """rewards [N], groups [N] -> advantages [N].

    baseline "mean":          r - mean(group)                       (GRPO, Dr. GRPO)
    baseline "leave_one_out": r - mean(other members) = n/(n-1) * (r - mean)   (RLOO; 0 alone)
    then scale_rewards "none" (as is; Dr. GRPO, the default), "group" (divided by the group's
    population std + eps; DeepSeekMath) or "batch" (by the whole batch's population std + eps).
    Earlier scale_rewards="rloo" is baseline="leave_one_out" unscaled.
    A group whose rewards are all equal gets exactly 0 under every mode.
    """
    if scale_rewards == "rloo":
        scale_rewards, baseline = "none", "leave_one_out"
    mean, std, n = group_stats(rewards, groups)  # [N] each
    centred = rewards - mean  # [N]
    if baseline == "leave_one_out":
        centred = torch.where(n > 1, centred * n / (n - 1).clamp(min=1), torch.zeros_like(centred))
    elif baseline != "mean":
        raise ValueError(f"baseline={baseline!r}: expected 'mean' or 'leave_one_out'")
    if scale_rewards == "none":
        return centred
    if scale_rewards == "group":
        return centred / (std + eps)
    if scale_rewards == "batch":
        return centred / (rewards.to(torch.float64).std(unbiased=False).to(rewards.dtype) + eps)
    raise ValueError(f"scale_rewards={scale_rewards!r}: expected 'none', 'group' or 'batch'")


def overlong_shaping(rewards: Tensor, turns: Tensor, max_turns: int, buffer: int) -> Tensor:
    """DAPO's overlong penalty over the turn budget: rewards [N], turns [N] -> shaped [N].

    Episodes that use the last `buffer` turns lose (turns - (max_turns - buffer)) / buffer,
    at most 1: with max_turns 6 and buffer 2, turn 5 costs 0.5 and turn 6 costs 1.
    """
    if buffer <= 0:
        return rewards
    over = (turns.to(rewards.dtype) - (max_turns - buffer)).clamp(min=0)  # [N]
    return rewards - (over / buffer).clamp(max=1.0)


def uniform_groups(rewards: Tensor, groups: Tensor) -> tuple[int, int, int]:
    """(groups, all-pass groups, all-fail groups) among the groups in `groups`.

    A uniform group (all rewards equal) is "all pass" when that reward is > 0 and "all fail"
    otherwise; mixed groups count in neither.
    """
    n_all_pass = n_all_fail = 0
    ids = torch.unique(groups)
    for g in ids.tolist():
        r = rewards[groups == g]  # [n_g]
        if bool((r == r[0]).all()):
            if float(r[0]) > 0:
                n_all_pass += 1
            else:
                n_all_fail += 1
    return len(ids), n_all_pass, n_all_fail

"""The probe: before training, does GRPO have anything to learn from?

A GRPO group of G episodes of one task teaches nothing when all G pass or all G fail (every
advantage is zero). The probe runs k episodes per task, takes each task's measured pass rate p,
and predicts the chance that a group of G drawn from a uniformly chosen task is mixed:

    P(mixed) = mean over tasks of 1 - p^G - (1 - p)^G

With dynamic sampling (keep drawing groups until `needed` mixed groups are kept or `tries` groups
were tried), the number of mixed groups among `tries` is Binomial(tries, P(mixed)): we expect
tries * P(mixed) of them, and the batch fills with chance P(Binomial >= needed).

What it does not guarantee: p = c/k from a handful of attempts is a noisy plug-in, and since
x^G is convex, E[p_hat^G] >= p^G (Jensen): in expectation the plug-in never overestimates a task's
chance of a mixed group. The probe is conservative; a task measured 0/4 may still be mixed.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fixrl.evals.run import EvalError, EvalResult, evaluate, load_split
from fixrl.harness.agent.policies import Policy, close_policy
from fixrl.harness.agent.rollouts import open_episode_rollouts
from fixrl.harness.agent.settings import EpisodeSettings
from fixrl.tasks import Suite
from fixrl.tasks.suites import BUILTIN_SUITE


@dataclass
class ProbeStats:
    tasks: int
    k: int
    group_size: int
    tries: int
    needed: int
    passes: list[int]
    attempts: list[int]
    mixed_tasks: int
    all_pass_tasks: int
    all_fail_tasks: int
    mixed_share: float
    """Share of tasks that passed some but not all of their attempts."""
    p_mixed_group: float
    """Chance that a group of `group_size` from a uniformly drawn task is mixed."""
    expected_mixed: float
    """Mixed (kept) groups expected in `tries` groups: tries * p_mixed_group."""
    p_full_batch: float
    """Chance that `tries` groups hold at least `needed` mixed ones (a step's batch fills)."""
    has_signal: bool
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def p_mixed(p: float, group_size: int) -> float:
    """Chance that a group of `group_size` Bernoulli(p) episodes holds both a pass and a fail."""
    return 1.0 - p ** group_size - (1.0 - p) ** group_size


def binom_tail(n: int, p: float, at_least: int) -> float:
    """P(Binomial(n, p) >= at_least)."""
    if at_least <= 0:
        return 1.0
    if at_least > n:
        return 0.0
    below = sum(math.comb(n, i) * p ** i * (1.0 - p) ** (n - i) for i in range(at_least))
    return max(0.0, min(1.0, 1.0 - below))


def probe_stats(passes: Sequence[int], k: int, group_size: int = 6, tries: int = 16,
                needed: int = 4, *, attempts: Sequence[int] | None = None) -> ProbeStats:
    """Predictions from per-task pass counts out of k attempts.

    `attempts` gives each task's own number of scored attempts when errored episodes left some
    tasks with fewer than k; tasks with no scored attempt must be dropped by the caller."""
    if k < 1:
        raise ValueError(f"probe: k (attempts per task) must be >= 1, got {k}")
    if group_size < 2:
        raise ValueError(f"probe: group size must be >= 2 (a group of {group_size} is never "
                         f"mixed), got {group_size}")
    if tries < 1 or needed < 1:
        raise ValueError(f"probe: tries and mixed groups needed must be >= 1, got tries={tries}, "
                         f"needed={needed}")
    passes = [int(c) for c in passes]
    if not passes:
        raise ValueError("probe: no tasks to predict from (empty list of passes)")
    att = [int(a) for a in attempts] if attempts is not None else [k] * len(passes)
    if len(att) != len(passes):
        raise ValueError(f"probe: {len(passes)} pass counts but {len(att)} attempt counts")
    for i, (c, a) in enumerate(zip(passes, att)):
        if a < 1 or not 0 <= c <= a:
            raise ValueError(f"probe: task {i} has {c} passes out of {a} attempts "
                             f"(need 0 <= passes <= attempts, attempts >= 1)")
    rates = [c / a for c, a in zip(passes, att)]  # [T]
    mixed = sum(1 for c, a in zip(passes, att) if 0 < c < a)
    all_pass = sum(1 for c, a in zip(passes, att) if c == a)
    all_fail = sum(1 for c in passes if c == 0)
    pm = sum(p_mixed(p, group_size) for p in rates) / len(rates)
    expected = tries * pm
    full = binom_tail(tries, pm, needed)
    has_signal = expected >= needed
    verdict = _verdict(pm, expected, full, tries, needed, group_size, all_pass, all_fail)
    return ProbeStats(
        tasks=len(passes), k=k, group_size=group_size, tries=tries, needed=needed,
        passes=passes, attempts=att, mixed_tasks=mixed, all_pass_tasks=all_pass,
        all_fail_tasks=all_fail, mixed_share=mixed / len(passes), p_mixed_group=pm,
        expected_mixed=expected, p_full_batch=full, has_signal=has_signal, verdict=verdict,
    )


def _verdict(pm: float, expected: float, full: float, tries: int, needed: int, g: int,
             all_pass: int, all_fail: int) -> str:
    odds = (f"{expected:.2f} mixed groups expected in {tries} tries against {needed} needed "
            f"(P(mixed group of {g}) = {pm:.3f}; a step fills its batch with chance {full:.2f})")
    if expected >= needed:
        return f"GRPO will have signal: {odds}"
    if pm == 0.0:
        why = ("every task passed all of its attempts: the tasks are too easy for this policy"
               if all_fail == 0 else
               "every task failed all of its attempts: the policy cannot solve them yet"
               if all_pass == 0 else
               "every task passed all or none of its attempts")
        return f"no signal: {why}; GRPO groups will be uniform and give no gradient"
    hint = ("most uniform tasks always fail: start from a stronger SFT adapter or easier tasks"
            if all_fail >= all_pass else
            "most uniform tasks always pass: use harder tasks or drop solved ones")
    return f"too few mixed groups: {odds}; raise --tries, or {hint}"


# ----------------------------------------------------------------------------- running


@dataclass
class ProbeResult:
    stats: ProbeStats
    task_ids: list[str]
    policy: dict[str, Any] = field(default_factory=dict)
    suite: str = ""
    split: str = ""
    errors: int = 0
    dropped: list[str] = field(default_factory=list)
    """Tasks left out because every attempt errored."""

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "suite": self.suite, "split": self.split,
                "errors": self.errors, "dropped": self.dropped,
                "per_task": {t: {"passes": c, "attempts": a} for t, c, a in
                             zip(self.task_ids, self.stats.passes, self.stats.attempts)},
                **self.stats.to_dict()}

    def to_text(self) -> str:
        s = self.stats
        lines = [f"probe: {self.policy.get('name', '?')} on {self.suite} / {self.split}, "
                 f"{s.k} attempts per task", ""]
        width = max((len(t) for t in self.task_ids), default=4)
        for t, c, a in zip(self.task_ids, s.passes, s.attempts):
            tag = "mixed" if 0 < c < a else ("all pass" if c == a else "all fail")
            lines.append(f"  {t:<{width}}  {c}/{a}  {'#' * c}{'.' * (a - c)}  {tag}")
        lines += ["",
                  f"tasks: {s.tasks}  mixed: {s.mixed_tasks} ({s.mixed_share:.0%})  "
                  f"all pass: {s.all_pass_tasks}  all fail: {s.all_fail_tasks}"
                  + (f"  errored episodes: {self.errors}" if self.errors else "")
                  + (f"  dropped (all attempts errored): {', '.join(self.dropped)}"
                     if self.dropped else ""),
                  s.verdict]
        return "\n".join(lines)


def check_probe(k: int, group_size: int, tries: int, needed: int) -> None:
    """EvalError naming the flag when the probe's numbers cannot work."""
    if k < 1:
        raise EvalError(f"-k must be >= 1 attempts per task, got {k}")
    if group_size < 2:
        raise EvalError(f"--group-size must be >= 2 (a group of {group_size} is never mixed)")
    if tries < 1 or needed < 1:
        raise EvalError(f"--tries and --mixed-groups must be >= 1 (got {tries}, {needed})")


def run_probe(policy: Policy | str, suite: Suite | Path | str, split: str = "train", k: int = 4, group_size: int = 6,
              tries: int = 16, needed: int = 4, *, seed: int = 0, progress: bool = True, out: Path | str | None = None,
              **eval_kwargs: Any) -> ProbeResult:
    """k episodes per task (the same batched loop as `evaluate`; `eval_kwargs` go to it, e.g.
    `rollouts`, `task_ids`, `policy_info`), then `probe_stats`."""
    check_probe(k, group_size, tries, needed)
    result = evaluate(policy, suite, split=split, n=k, ks=(1,), seed=seed, out=out, progress=progress,
                      **eval_kwargs)
    return probe_result(result, group_size, tries, needed)


def probe_result(result: EvalResult, group_size: int = 6, tries: int = 16,
                 needed: int = 4) -> ProbeResult:
    """The probe's figures from an eval result (`evals.run.EvalResult`): its n episodes per task
    are the k attempts. Errored episodes are left out of each task's attempts."""
    k = result.n
    kept = [t for t in result.tasks if t.scored > 0]
    dropped = [t.task_id for t in result.tasks if t.scored == 0]
    if not kept:
        raise EvalError(f"probe: every episode errored ({result.overall.get('errors')} errors); "
                        f"the sandboxes are failing, see the log")
    stats = probe_stats([t.passes for t in kept], k, group_size, tries, needed,
                        attempts=[t.scored for t in kept])
    return ProbeResult(stats=stats, task_ids=[t.task_id for t in kept], policy=result.policy,
                       suite=result.suite, split=result.split,
                       errors=int(result.overall.get("errors", 0)), dropped=dropped)


@dataclass
class ProbeConfig:
    """Every setting of `fixrl probe`: k attempts per task, and the mixed groups GRPO would see."""

    suite: str | None = None
    """Suite directory; None: the built-in suite."""
    split: str = "train"
    """Task split to probe (the one GRPO trains on)."""
    tasks: list[str] | None = None
    """Only these task ids of the split."""
    k: int = 4
    """Attempts per task."""
    group_size: int = 6
    """GRPO's group size G."""
    tries: int = 16
    """Groups tried per step (dynamic sampling's max_group_tries)."""
    mixed_groups: int = 4
    """Mixed groups needed per step (dynamic sampling's min_mixed_groups)."""
    seed: int = 0
    """Run seed."""
    out: str | None = None
    """Also save the probe's episodes here."""
    episode: EpisodeSettings = field(default_factory=EpisodeSettings)
    """The policy probed (the start of a GRPO run), the episode settings GRPO will use, and where
    the episodes run."""


def run_probe_job(cfg: ProbeConfig, progress: bool = True) -> ProbeResult:
    """`fixrl probe`: cheap checks first, then the policy, the rollouts and `run_probe`."""
    check_probe(cfg.k, cfg.group_size, cfg.tries, cfg.mixed_groups)
    cfg.episode.policy.check()
    suite, _ = load_split(cfg.suite or _builtin_suite(), cfg.split, cfg.tasks)
    policy = cfg.episode.policy.load(cfg.seed)
    try:
        with open_episode_rollouts(suite, cfg.episode) as rollouts:
            return run_probe(policy, suite, split=cfg.split, k=cfg.k, group_size=cfg.group_size, tries=cfg.tries,
                             needed=cfg.mixed_groups, seed=cfg.seed, progress=progress, out=cfg.out,
                             rollouts=rollouts, policy_info=cfg.episode.policy.describe(), task_ids=cfg.tasks)
    finally:
        close_policy(policy)  # a vLLM server started for the job stops with it


def _builtin_suite():

    return BUILTIN_SUITE

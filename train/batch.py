"""The records the trainer consumes: a `Group` (the episodes of one task rolled out together) and
a `SampleBatch` (what one update's sampling produced: the groups kept and the counts of those
that were not). The sampler makes them, the update reads them, the run directory writes them.

What they do not guarantee: a group's trajectories are the rollout's own objects, not copies;
the records are frozen, the trajectories inside are not.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, overload

from fixrl.harness.agent.trajectory import Trajectory

GroupOutcome = Literal["mixed", "all_pass", "all_fail", "too_small"]


@dataclass(frozen=True)
class Group(Sequence[Trajectory]):
    """The G episodes of one task, and what the trainer makes of them. As a sequence it is its
    scored episodes: errored ones (a sandbox died) are dropped, being neither passes nor fails."""

    task_id: str
    episodes: tuple[Trajectory, ...]
    """Every episode rolled out for the task, errored ones included, in the rollout's order."""
    advantages: tuple[float, ...] | None = None
    """One per scored episode, in order, once the update has computed them."""

    @property
    def scored(self) -> tuple[Trajectory, ...]:
        return tuple(t for t in self.episodes if t.info.outcome != "error")

    @property
    def dropped(self) -> tuple[Trajectory, ...]:
        """The errored episodes, left out of the baseline and the update."""
        return tuple(t for t in self.episodes if t.info.outcome == "error")

    @property
    def rewards(self) -> list[float]:
        return [float(t.reward) for t in self.scored]

    @property
    def outcome(self) -> GroupOutcome:
        """"mixed" (rewards differ: a learning signal), "all_pass" / "all_fail" (all equal, above
        0 or not), "too_small" (fewer than 2 scored episodes: no baseline)."""
        rewards = self.rewards
        if len(rewards) < 2:
            return "too_small"
        if max(rewards) != min(rewards):
            return "mixed"
        return "all_pass" if rewards[0] > 0 else "all_fail"

    def with_advantages(self, advantages: Sequence[float]) -> Group:
        if len(advantages) != len(self):
            raise ValueError(f"group of {self.task_id}: {len(advantages)} advantages for {len(self)} episodes")
        return replace(self, advantages=tuple(advantages))

    def __len__(self) -> int:
        return len(self.scored)

    def __iter__(self) -> Iterator[Trajectory]:
        return iter(self.scored)

    @overload
    def __getitem__(self, i: int) -> Trajectory: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Trajectory, ...]: ...

    def __getitem__(self, i: int | slice) -> Trajectory | tuple[Trajectory, ...]:
        return self.scored[i]


@dataclass
class SampleBatch:
    """What one update's sampling produced (the sampler fills it in as groups come back)."""

    kept: list[Group] = field(default_factory=list)
    """The groups the update trains on (dynamic sampling: the mixed ones)."""
    sampled: list[Trajectory] = field(default_factory=list)
    """Every trajectory rolled out for this update, errored ones included, in rollout order."""
    groups_tried: int = 0
    all_pass: int = 0
    """Tried groups whose rewards were all equal and positive."""
    all_fail: int = 0
    """Tried groups whose rewards were all equal and not positive."""
    too_small: int = 0
    """Tried groups left with fewer than 2 episodes after dropping errored ones."""
    errors: int = 0
    rollout_calls: int = 0
    wanted: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: {"solved": 0, "hopeless": 0})

    @property
    def short(self) -> bool:
        return len(self.kept) < self.wanted

    @property
    def episodes(self) -> list[Trajectory]:
        """The kept groups' scored episodes, group by group: the order of the update's advantages."""
        return [t for g in self.kept for t in g]

    def set_advantages(self, advantages: Sequence[float]) -> None:
        """Give each kept group its share of `advantages` (one per episode of `episodes`)."""
        if len(advantages) != len(self.episodes):
            raise ValueError(f"{len(advantages)} advantages for {len(self.episodes)} kept episodes")
        start, groups = 0, []
        for g in self.kept:
            groups.append(g.with_advantages(advantages[start:start + len(g)]))
            start += len(g)
        self.kept = groups

    def advantages(self) -> dict[int, float]:
        """id(trajectory) -> its advantage, for the episodes the update trained on."""
        return {id(t): a for g in self.kept if g.advantages is not None for t, a in zip(g, g.advantages)}

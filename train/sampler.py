"""Dynamic sampling: roll out groups until enough of them carry a learning signal.

A group of G episodes of one task teaches nothing when its rewards are all equal (every
advantage is exactly 0). DAPO's answer, used here: draw tasks, roll out their groups (several
groups in one batched call), keep the groups whose rewards differ, and repeat until
`min_mixed_groups` are kept or `max_group_tries` groups were tried; then update on what was
kept, and say so when the batch came up short. Errored episodes (a sandbox died) are dropped
from their group before the check: they are neither passes nor fails.

Rollouts are the expensive part, so the sampler remembers each task's recent group outcomes
and, when asked (`skip_solved`, `skip_hopeless`), lets a task whose recent groups were all
pass (or all fail) through only with probability `skip_keep_prob` when its turn comes. It
never skips a task for good: a task's memory only changes when it is drawn again.

Data order: an epoch is a shuffled pass over the tasks; the order, position and the RNG are
the sampler's state (`state_dict`), saved in checkpoints so a resumed run draws the same tasks.
"""
from __future__ import annotations

import logging
import random
from collections import deque
from typing import Any, Callable, Protocol, Sequence

from fixrl.harness.agent.trajectory import Trajectory
from fixrl.train.batch import Group, SampleBatch
from fixrl.train.resolve import RunConfig

log = logging.getLogger(__name__)


class TaskLike(Protocol):
    """What the sampler needs of a task: its id (the suite's `Task`, or a stand-in in tests)."""

    @property
    def id(self) -> str: ...


# rollout(tasks, call_index) -> trajectories with traj.group = index into `tasks`
RolloutFn = Callable[[list[TaskLike], int], list[Trajectory]]


class DynamicSampler:
    """Draws tasks in a seeded, resumable order and rolls out their groups until a batch is full."""

    def __init__(self, tasks: Sequence[TaskLike], *, num_generations: int, dynamic_sampling: bool = True,
                 min_mixed_groups: int = 4, max_group_tries: int = 16, groups_per_rollout: int | None = None,
                 tasks_per_step: int = 4, skip_solved: bool = False, skip_hopeless: bool = False,
                 skip_keep_prob: float = 0.25, outcome_memory: int = 2, seed: int = 0) -> None:
        if not tasks:
            raise ValueError("the sampler has no tasks (is the suite's training split empty?)")
        self.tasks = list(tasks)
        self.G = num_generations
        self.dynamic = dynamic_sampling
        self.min_mixed = min_mixed_groups
        self.max_tries = max_group_tries
        self.per_call = groups_per_rollout or (min_mixed_groups if dynamic_sampling else tasks_per_step)
        self.tasks_per_step = tasks_per_step
        self.skip_solved, self.skip_hopeless = skip_solved, skip_hopeless
        self.keep_prob = skip_keep_prob
        self.memory_len = outcome_memory
        self.rng = random.Random(seed)
        self.order: list[int] = []
        self.pos = 0
        self.epoch = 0
        self.memory: dict[str, deque[str]] = {}
        self.draws: dict[str, int] = {}

    @classmethod
    def from_config(cls, tasks: Sequence[TaskLike], cfg: RunConfig) -> DynamicSampler:
        return cls(tasks, num_generations=cfg.num_generations, dynamic_sampling=cfg.dynamic_sampling,
                   min_mixed_groups=cfg.min_mixed_groups, max_group_tries=cfg.max_group_tries,
                   groups_per_rollout=cfg.groups_per_rollout, tasks_per_step=cfg.tasks_per_step,
                   skip_solved=cfg.skip_solved, skip_hopeless=cfg.skip_hopeless,
                   skip_keep_prob=cfg.skip_keep_prob, outcome_memory=cfg.outcome_memory, seed=cfg.seed)

    # ------------------------------------------------------------------ drawing tasks

    def status(self, task_id: str) -> str | None:
        """"solved" / "hopeless" when every remembered group of the task was all-pass / all-fail."""
        mem = self.memory.get(task_id)
        if not mem:
            return None
        if all(m == "pass" for m in mem):
            return "solved"
        if all(m == "fail" for m in mem):
            return "hopeless"
        return None

    def _next_index(self) -> int:
        if self.pos >= len(self.order):
            self.order = list(range(len(self.tasks)))
            self.rng.shuffle(self.order)
            self.pos = 0
            self.epoch += 1
        i = self.order[self.pos]
        self.pos += 1
        return i

    def draw(self, skipped: dict[str, int]) -> TaskLike:
        """The next task in the data order, letting solved/hopeless tasks through less often."""
        for _ in range(len(self.tasks)):
            task = self.tasks[self._next_index()]
            st = self.status(task.id)
            skippable = (st == "solved" and self.skip_solved) or (st == "hopeless" and self.skip_hopeless)
            if skippable and self.rng.random() >= self.keep_prob:
                skipped[st] += 1
                continue
            break
        # a full pass of skips: take the task anyway rather than loop
        self.draws[task.id] = self.draws.get(task.id, 0) + 1
        return task

    # ------------------------------------------------------------------ sampling

    def sample(self, rollout: RolloutFn) -> SampleBatch:
        """Roll out groups until the batch is full (or the tries run out) and return them."""
        batch = SampleBatch(wanted=self.min_mixed if self.dynamic else self.tasks_per_step)
        budget = self.max_tries if self.dynamic else self.tasks_per_step
        while batch.groups_tried < budget and (not self.dynamic or len(batch.kept) < self.min_mixed):
            n = min(self.per_call, budget - batch.groups_tried)
            tasks = [self.draw(batch.skipped) for _ in range(n)]
            trajs = rollout(tasks, batch.rollout_calls)
            batch.rollout_calls += 1
            batch.sampled.extend(trajs)
            for group in _groups(tasks, trajs):
                self._take(batch, group)
        if batch.short:
            log.warning("dynamic sampling came up short: %d of %d mixed groups after %d groups tried "
                        "(%d all-pass, %d all-fail)", len(batch.kept), batch.wanted, batch.groups_tried,
                        batch.all_pass, batch.all_fail)
        if batch.skipped["solved"] or batch.skipped["hopeless"]:
            log.info("sampler skipped %d solved and %d hopeless task draws", batch.skipped["solved"],
                     batch.skipped["hopeless"])
        return batch

    def _take(self, batch: SampleBatch, group: Group) -> None:
        """Count a tried group, remember its task's outcome, keep it when it can teach."""
        batch.groups_tried += 1
        batch.errors += len(group.dropped)
        outcome = group.outcome
        if outcome == "too_small":
            batch.too_small += 1
            return
        self._remember(group.task_id, {"mixed": "mixed", "all_pass": "pass", "all_fail": "fail"}[outcome])
        if outcome == "all_pass":
            batch.all_pass += 1
        elif outcome == "all_fail":
            batch.all_fail += 1
        if not self.dynamic or outcome == "mixed":
            batch.kept.append(group)

    def _remember(self, task_id: str, outcome: str) -> None:
        self.memory.setdefault(task_id, deque(maxlen=self.memory_len)).append(outcome)

    # ------------------------------------------------------------------ checkpointing

    def state_dict(self) -> dict[str, Any]:
        version, internal, gauss = self.rng.getstate()
        return {"rng": [version, list(internal), gauss], "order": list(self.order), "pos": self.pos,
                "epoch": self.epoch, "memory": {k: list(v) for k, v in self.memory.items()},
                "draws": dict(self.draws), "task_ids": [t.id for t in self.tasks]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        ids = [t.id for t in self.tasks]
        if state.get("task_ids") != ids:
            raise ValueError("the checkpoint's sampler was made for other tasks (did the suite or its split "
                             "change since the run started?)")
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
        self.order, self.pos, self.epoch = list(state["order"]), int(state["pos"]), int(state["epoch"])
        self.memory = {k: deque(v, maxlen=self.memory_len) for k, v in state["memory"].items()}
        self.draws = dict(state.get("draws", {}))


def _groups(tasks: list[TaskLike], trajs: list[Trajectory]) -> list[Group]:
    """The trajectories of one rollout call as one group per task (`traj.group` indexes `tasks`)."""
    by_group: dict[int, list[Trajectory]] = {g: [] for g in range(len(tasks))}
    for t in trajs:
        if t.group is None or t.group not in by_group:
            raise RuntimeError(f"rollout returned a trajectory of group {t.group!r}; expected 0..{len(tasks) - 1}")
        by_group[t.group].append(t)
    return [Group(task.id, tuple(by_group[g])) for g, task in enumerate(tasks)]

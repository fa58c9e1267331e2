"""TaskMap: one function of a task and a sandbox pool, applied to many tasks on a Ray cluster's
workers -- the embarrassingly parallel jobs (validating a suite, testing generated candidates).

    with RayRollouts(...) as rollouts:   # or WorkerPool(SandboxConfig(ray=...))
        results = TaskMap(rollouts.pool).map(validate_task, suite.tasks, 3)   # fn(task, pool, 3)

Each call runs on one worker with the task rebased on that node's copy of its repository (what
travels is what rollouts ship: the task and its clean tree) and the worker's own SandboxPool;
as many calls run at once as the workers have slots. A call whose worker is lost runs again on
another worker (`retries` times); one that still fails, or raises, gives its exception in its
place in the results: the caller decides what an infrastructure failure means (a validation
reports it, never as an invalid task). `fn` must be importable on every node (a module-level
function of fixrl or of an installed package), as any reward function.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fixrl.harness.agent.ray_pool import WorkerLost, WorkerPool
from fixrl.sandbox import SandboxError
from fixrl.tasks import Task

log = logging.getLogger(__name__)


class TaskMap:
    """`fn(task, pool, *args)` over tasks on the cluster's workers."""

    def __init__(self, pool: WorkerPool, *, retries: int = 2) -> None:
        self.pool = pool
        self.retries = retries

    def map(self, fn: Callable[..., Any], tasks: Sequence[Task], *args: Any, deadline: float,
            progress: Callable[[Task, Any], None] | None = None) -> list[Any]:
        """Results in the tasks' order (an exception in the place of a call that failed).
        `deadline`: seconds one call may take before its worker counts as hung."""
        width = max(1, self.pool.capacity())
        with ThreadPoolExecutor(max_workers=width, thread_name_prefix="fixrl-ray-map") as ex:
            futures = [ex.submit(self._one, fn, task, args, deadline) for task in tasks]
            out = []
            for task, fut in zip(tasks, futures, strict=True):
                try:
                    res = fut.result()
                except Exception as e:  # noqa: BLE001 - the caller reads each call's own failure
                    res = e
                if progress is not None:
                    progress(task, res)
                out.append(res)
        return out

    def _one(self, fn: Callable[..., Any], task: Task, args: tuple, deadline: float) -> Any:
        last: WorkerLost | None = None
        for attempt in range(self.retries + 1):
            w = self.pool.acquire(failover=attempt > 0)
            done = False
            try:
                token = self.pool.prepare(w, None, None, task, deadline=deadline)
                result = w.call("apply", fn, token, *args, deadline=deadline)
                done = True
                return result
            except WorkerLost as e:
                last = e
                log.warning("%s moves to another worker (%s)", task.id, e)
            finally:
                self.pool.release(w, finished=done)
        raise SandboxError(f"{task.id}: lost its worker {self.retries + 1} times (last: {last})")

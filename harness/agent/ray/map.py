"""TaskMap: one function of a task and a sandbox pool, applied to many tasks on a Ray cluster's
workers -- the embarrassingly parallel jobs (validating a suite, testing generated candidates).

    with RayRollouts(...) as rollouts:   # or WorkerPool(ClusterConfig(ADDRESS))
        results = TaskMap(rollouts.pool).map(validate_task, suite.tasks, 3)   # fn(task, pool, 3)

Each call runs on one worker with the task rebased on that node's copy of its repository (what
travels is what rollouts ship: the task and its clean tree) and the worker's own SandboxPool;
as many calls run at once as the workers have slots. A call whose worker is lost runs again on
another worker (`retries` times); one that still fails, or raises, gives its exception in its
place in the results: the caller decides what an infrastructure failure means (a validation
reports it, never as an invalid task). `fn` must be importable on every node (a module-level
function of fixrl or of an installed package), as any reward function.

`TaskMap.submit` starts one call and returns its future (for callers that decide as results
arrive); `RayRunner` is the generator's Runner (tasks.generate.execute) on a cluster: each test run of
`fixrl tasks generate --ray` runs on a worker, in that node's copy of the generator's workspace.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fixrl.harness.agent.ray.pool import WorkerLost, WorkerPool
from fixrl.harness.agent.settings import ClusterConfig
from fixrl.sandbox import SandboxConfig, SandboxError, SandboxPool
from fixrl.tasks import Task

log = logging.getLogger(__name__)


class TaskMap:
    """`fn(task, pool, *args)` over tasks on the cluster's workers."""

    def __init__(self, pool: WorkerPool, *, retries: int = 2) -> None:
        self.pool = pool
        self.retries = retries
        self._ex: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], task: Task, *args: Any, deadline: float) -> Future:
        """Start `fn(task, pool, *args)` on a worker; its future holds the result or the exception.
        Calls beyond the workers' slots wait for one (in threads of this map, closed by `close`)."""
        with self._lock:
            if self._ex is None:
                self._ex = ThreadPoolExecutor(max_workers=64, thread_name_prefix="fixrl-ray-submit")
            return self._ex.submit(self._one, fn, task, args, deadline)

    def close(self) -> None:
        """Cancel the calls not yet started; wait for the running ones."""
        with self._lock:
            ex, self._ex = self._ex, None
        if ex is not None:
            ex.shutdown(wait=True, cancel_futures=True)

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


def in_tree(task: Task, pool: SandboxPool, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(workspace, pool, *args)` with the workspace this node holds for `task` (a worker's
    side of RayRunner.submit)."""
    return fn(Path(str(task.repo)), pool, *args)


class RayRunner:
    """tasks.generate.execute.Runner on a Ray cluster: `fn(workspace, pool, *args)` on the workers, each in
    its node's copy of `workspace` (shipped once per node, content-addressed) with the node's
    sandbox pool. `width` is the cluster's sandbox slots when it opened."""

    def __init__(self, address: str, backend: str = "local", image: str | None = None) -> None:
        self.workers = WorkerPool(ClusterConfig(address), SandboxConfig(backend=backend, image=image))  # type: ignore[arg-type]
        self.map = TaskMap(self.workers)
        self.width = self.workers.capacity()
        self._trees: dict[Path, Task] = {}

    def _task(self, workspace: Path) -> Task:
        # A workspace travels as a task's clean repository; the rest of the task is never used.
        key = Path(workspace).resolve()
        if key not in self._trees:
            self._trees[key] = Task(id="generate", kind="question", answer="-", issue="(the generator's test runs)",
                                    repo=str(key), check={"command": "true"})
        return self._trees[key]

    def submit(self, fn: Callable[..., Any], workspace: Path, *args: Any, seconds: float) -> Future:
        return self.map.submit(in_tree, self._task(workspace), fn, *args, deadline=seconds)

    def close(self) -> None:
        try:
            self.map.close()
        finally:
            self.workers.close()

    def __enter__(self) -> RayRunner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

"""TaskMap on a real local Ray cluster: validating tasks on the workers gives what validating
them in one process gives (the verdicts of every state, the reasons, the warnings), for valid
tasks and for one whose reference fix does not fix."""
from __future__ import annotations

import pytest

from fixrl import tasks as tasks_pkg
from fixrl.harness.agent.ray_map import TaskMap
from fixrl.harness.agent.ray_pool import WorkerPool
from fixrl.sandbox import SandboxConfig, SandboxPool
from fixrl.tasks.suites import BUILTIN_SUITE
from fixrl.tasks.validate import validate_task

pytestmark = pytest.mark.ray


def _same(result) -> dict:
    d = result.to_json()
    d.pop("seconds")
    return d


def test_validation_on_the_workers_equals_one_process(ray_cluster):
    suite = tasks_pkg.load_suite(BUILTIN_SUITE)
    chosen = [t for t in suite.tasks if t.kind == "fix"][:3] + [t for t in suite.tasks if t.kind == "question"][:1]
    broken = chosen[0].model_copy(update={"id": "no-fix", "fix": None})
    chosen.append(broken)  # a fix task without its fix: invalid, the same way everywhere
    workers = WorkerPool(SandboxConfig(ray=ray_cluster.address))
    try:
        seen = []
        on_cluster = TaskMap(workers).map(validate_task, chosen, 1, deadline=600,
                                          progress=lambda t, r: seen.append(t.id))
        stats = workers.stats()
    finally:
        workers.close()
    with SandboxPool(2) as pool:
        local = [validate_task(t, pool, 1) for t in chosen]
    assert not any(isinstance(r, BaseException) for r in on_cluster), on_cluster
    assert [_same(r) for r in on_cluster] == [_same(r) for r in local]
    assert [r.ok for r in on_cluster] == [True, True, True, True, False]
    assert sorted(seen) == sorted(t.id for t in chosen)
    assert sum(s["episodes"] for s in stats.values()) == len(chosen) and len(stats) == 2

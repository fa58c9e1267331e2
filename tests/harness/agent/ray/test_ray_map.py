"""TaskMap on a real local Ray cluster: validating tasks on the workers gives what validating
them in one process gives (the verdicts of every state, the reasons, the warnings), for valid
tasks and for one whose reference fix does not fix."""
from __future__ import annotations

import pytest

from fixrl import tasks as tasks_pkg
from fixrl.harness.agent.ray.map import TaskMap
from fixrl.harness.agent.ray.pool import WorkerPool
from fixrl.harness.agent.settings import ClusterConfig
from fixrl.sandbox import SandboxPool
from fixrl.tasks.check.validate import validate_task
from fixrl.tasks.suites import BUILTIN_SUITE

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
    workers = WorkerPool(ClusterConfig(ray_cluster.address))
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


@pytest.mark.slow
def test_generation_on_the_cluster_equals_one_process(ray_cluster, tmp_path):
    """`fixrl tasks generate --ray`: every test run of the generator on the workers (each in its
    node's copy of the workspace); the suite is the one a single process makes."""
    from genkit import make_shop_repo

    from fixrl.harness.agent.ray.map import RayRunner
    from fixrl.tasks.generate.pipeline import generate

    repo = make_shop_repo(tmp_path)
    opts = {"seed": 2, "validate": False, "progress": False, "max_per_function": 2}
    with RayRunner(ray_cluster.address) as runner:
        assert runner.width == 6
        on_cluster = generate(repo, "python -m pytest -q", tmp_path / "cluster", runner=runner, **opts)
        stats = runner.workers.stats()
    local = generate(repo, "python -m pytest -q", tmp_path / "local", workers=2, **opts)

    def files(root):
        return {str(p.relative_to(root)): p.read_bytes() for sub in ("tasks", "checks")
                for p in sorted((root / sub).rglob("*")) if p.is_file()}

    assert on_cluster.task_ids == local.task_ids and on_cluster.valid >= 3
    assert files(tmp_path / "cluster") == files(tmp_path / "local")
    assert {op: vars(s) for op, s in on_cluster.per_op.items()} == {op: vars(s) for op, s in local.per_op.items()}
    assert len(stats) == 2 and all(s["episodes"] > 0 for s in stats.values())  # both nodes ran some

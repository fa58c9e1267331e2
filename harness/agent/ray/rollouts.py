"""RayRollouts: the `Rollouts` seam over a Ray cluster (`ClusterConfig.address`, `--ray auto|ADDRESS`).

    with open_rollouts(suite, env_config, sandbox, ClusterConfig("auto")) as rollouts:   # this class
        trajs = rollouts.run(policy, tasks, n=8, seed=0)

The policy, generation and trajectories stay in this process, batched in lockstep as with
`LocalRollouts`; each episode's sandbox start-up, tool calls and hidden check run in a worker on
one of the cluster's nodes (`harness.agent.ray.worker`), each node with its own sandbox pool
of its `fixrl_sandbox` slots. The lockstep width is the sum of the live nodes' slots (not
`SandboxConfig.pool_size`), and it follows the cluster: a node that joins takes episodes from
then on; one that dies takes its episodes' worker with it and they move (ray.envside).

For the same policy, tasks, n and seed a scripted policy gives exactly the trajectories of
`LocalRollouts`; a model policy the same up to the batches its turns were generated in (which
the lockstep width and the order of finishing checks decide).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Self

from fixrl.envs import EnvConfig
from fixrl.harness.agent.loop import run_episodes
from fixrl.harness.agent.policies import Policy
from fixrl.harness.agent.ray.envside import RayEnvSide
from fixrl.harness.agent.ray.pool import WorkerPool
from fixrl.harness.agent.settings import ClusterConfig
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.sandbox import SandboxConfig
from fixrl.tasks import Suite, Task
from fixrl.tasks.check.images import check_images

log = logging.getLogger(__name__)


class RayRollouts:
    """Episodes whose environments run on a Ray cluster; the workers are kept across `run` calls
    and shared by every RayRollouts this process holds open (`WorkerPool.shared`).

    `nodes`: use only these node ids, with workers of its own (a benchmark of 1, 2, 3 nodes)."""

    def __init__(self, suite: Suite | None, env: EnvConfig | None = None, sandbox: SandboxConfig | None = None,
                 cluster: ClusterConfig | None = None, *, max_total_tokens: int | None = None,
                 nodes: Sequence[str] | None = None, pool: WorkerPool | None = None) -> None:
        """cluster: default `ClusterConfig("auto")`, the cluster this machine belongs to."""
        self.suite = suite
        self.env = env if env is not None else EnvConfig()
        self.sandbox = sandbox if sandbox is not None else SandboxConfig()
        self.cluster = cluster if cluster is not None else ClusterConfig("auto")
        self.max_total_tokens = max_total_tokens
        self._owns_pool = pool is None
        if pool is None:
            # The process's workers on the cluster, shared with any other rollouts it holds open.
            pool = (WorkerPool.shared(self.cluster, self.sandbox) if nodes is None
                    else WorkerPool(self.cluster, self.sandbox, nodes=nodes))
        self.pool = pool

    @property
    def backend(self) -> str:
        return self.sandbox.backend

    def with_env(self, env: EnvConfig, *, max_total_tokens: int | None = None) -> RayRollouts:
        """Rollouts over the same workers with other episode settings (closing it is a no-op)."""
        return RayRollouts(self.suite, env, self.sandbox, self.cluster, pool=self.pool,
                           max_total_tokens=max_total_tokens if max_total_tokens is not None else self.max_total_tokens)

    def run(self, policy: Policy, tasks: Sequence[Task], n: int, seed: int = 0, *,
            progress: Callable[[Trajectory], None] | None = None) -> list[Trajectory]:
        """n episodes of each task, ordered by (task, sample); see `run_episodes`."""
        check_images(tasks, self.sandbox.backend, present=False)   # each node's worker checks its own images
        side = RayEnvSide(self.pool, self.suite, self.env, retries=self.cluster.retries,
                          margin=self.cluster.call_margin)
        try:
            return run_episodes(policy, tasks, n, env=side, seed=seed, max_total_tokens=self.max_total_tokens,
                                progress=progress)
        finally:
            side.close()

    def stats(self) -> dict[str, dict]:
        """Per node id: host, backend, slots, episodes finished there, why it was lost (if it was)."""
        return self.pool.stats()

    def close(self) -> None:
        if self._owns_pool:   # once: the pool counts its users
            self._owns_pool = False
            self.pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

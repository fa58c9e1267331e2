"""The rollout seam: how GRPO, `fixrl eval`, the probe, `fixrl rollout` and the demo get
episodes, whatever runs their environments.

    rollouts = open_rollouts(suite, env_config, sandbox_config, cluster_config)
    with rollouts:
        trajs = rollouts.run(policy, tasks, n=8, seed=0)

The caller builds it once from a typed `EnvConfig`, `SandboxConfig` and `ClusterConfig` and keeps
it for the whole job, so that training and its periodic evaluation share one set of sandboxes
(`with_env` gives the same sandboxes other episode settings). `LocalRollouts` (one process,
`harness.agent.local_rollouts`) is the default and the fastest path on one machine; with
`ClusterConfig.address` set, `RayRollouts` (`harness.agent.ray.rollouts`, the `fixrl[ray]` extra)
runs the environment side on a Ray cluster's nodes.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Literal, Protocol, Sequence, runtime_checkable

from fixrl.envs import EnvConfig
from fixrl.harness.agent.local_rollouts import LocalRollouts
from fixrl.harness.agent.policies import Policy
from fixrl.harness.agent.settings import ClusterConfig, EpisodeSettings
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.sandbox import SandboxConfig
from fixrl.sandbox.environment import EnvBuildError
from fixrl.tasks import Suite, Task
from fixrl.tasks.format.loader import build_environments

log = logging.getLogger(__name__)


@runtime_checkable
class Rollouts(Protocol):
    backend: str
    """The sandbox backend the episodes run in (recorded in results)."""

    def run(self, policy: Policy, tasks: Sequence[Task], n: int, seed: int = 0, *,
            progress: Callable[[Trajectory], None] | None = None) -> list[Trajectory]:
        """n episodes of each task, ordered by (task, sample); `traj.group` is the task's index.
        For the same policy, tasks, n and seed, every implementation gives the same episodes."""
        ...

    def with_env(self, env: EnvConfig, *, max_total_tokens: int | None = None) -> Rollouts:
        """The same sandboxes (or workers) with other episode settings; closing it is a no-op."""
        ...

    def close(self) -> None:
        """Release every sandbox (and worker) the rollouts hold."""
        ...

    def __enter__(self) -> Rollouts: ...

    def __exit__(self, *exc: object) -> None: ...


def open_rollouts(suite: Suite | None, env: EnvConfig | None = None, sandbox: SandboxConfig | None = None,
                  cluster: ClusterConfig | None = None, *, max_total_tokens: int | None = None) -> Rollouts:
    """The rollouts a job's config asks for: episodes in this process, or on the Ray cluster
    `cluster.address` names (ClusterError when it cannot serve). The suite's environments are
    built first where not cached (EnvBuildError when one cannot be)."""
    if suite is not None:
        broken = build_environments(list(suite.tasks), sandbox.backend if sandbox is not None else "local",
                                    lambda line: log.info("%s", line))
        if broken:
            raise EnvBuildError(next(iter(broken.values())))
    if cluster is not None and cluster.address:
        cluster.validate()
        if sandbox is not None:
            sandbox.validate()
        # Imports Ray (an optional extra) only for a run that asks for a cluster.
        from fixrl.harness.agent.ray.rollouts import RayRollouts  # noqa: PLC0415 - ray is an optional extra (fixrl[ray])

        return RayRollouts(suite, env, sandbox, cluster, max_total_tokens=max_total_tokens)
    return LocalRollouts(suite, env, sandbox, max_total_tokens=max_total_tokens)


def open_episode_rollouts(suite: Suite | None, settings: EpisodeSettings) -> Rollouts:
    """`open_rollouts` for a job's `EpisodeSettings`."""
    return open_rollouts(suite, settings.env, settings.sandbox, settings.cluster,
                         max_total_tokens=settings.max_total_tokens)


@dataclass
class RolloutConfig:
    """Every setting of `fixrl rollout`: n episodes of some tasks, to read or to save as SFT data."""

    suite: str = "builtin"
    """Suite directory, or `builtin`."""
    split: Literal["train", "heldout", "all"] = "all"
    """Tasks of this split."""
    tasks: list[str] | None = None
    """Only these task ids (any split)."""
    n: int = 1
    """Episodes per task."""
    seed: int = 0
    """Run seed (per-episode seeds derive from it)."""
    save: str | None = None
    """Write the trajectories here as JSONL (`.gz` to compress)."""
    episode: EpisodeSettings = field(default_factory=EpisodeSettings)
    """Who plays, the episode's rules and where it runs."""

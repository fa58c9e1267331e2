"""The records a job's config nests to say how its episodes are played and where:
`EpisodeSettings` (who plays, the episode's rules, its sandboxes, its cluster, its token budget),
shared by `fixrl rollout`, `fixrl eval` and `fixrl probe`; and `ClusterConfig`, the Ray cluster
(if any) that runs the environment side.

Ray's fields keep the flags they had when they were `SandboxConfig.ray*` (`--ray`,
`--ray-retries`, `--ray-call-margin`); a config saved then is read by `split_legacy_sandbox`.
Nothing here imports Ray or a model: a job's config names them long before (and whether or not)
anything connects or loads.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fixrl.envs import EnvConfig
from fixrl.harness.agent.policies import PolicyConfig
from fixrl.sandbox import SandboxConfig, SandboxConfigError

LEGACY_SANDBOX_FIELDS = {"ray": "address", "ray_retries": "retries", "ray_call_margin": "call_margin"}
"""Ray's fields as they were named inside SandboxConfig -> their names in ClusterConfig."""
LEGACY_DOTTED = {f"sandbox.{old}": f"cluster.{new}" for old, new in LEGACY_SANDBOX_FIELDS.items()}
"""The same as dotted names (`--set sandbox.ray=auto`, a resume override): `sandbox.ray` -> `cluster.address`."""


class ClusterError(SandboxConfigError):
    """The cluster a run asks for (`ClusterConfig.address`, `--ray`) cannot serve it: Ray is not
    installed, nothing answers at the address, no node offers `fixrl_sandbox` slots. The user's
    to fix, so never retried."""


@dataclass
class ClusterConfig:
    """The Ray cluster behind a run's episodes (the `fixrl[ray]` extra); no address: this process."""

    address: str | None = field(default=None, metadata={"flag": "ray"})
    """Run the episodes' sandboxes, tool calls and checks on a Ray cluster (`fixrl[ray]`): "auto"
    (the cluster this machine belongs to) or the head's HOST:PORT. Unset: in this process."""
    retries: int = field(default=2, metadata={"flag": "ray-retries"})
    """Times an episode whose worker node died is restarted on another node (same task, same seed,
    its tool calls replayed) before it ends as `error`."""
    call_margin: float = field(default=60.0, metadata={"flag": "ray-call-margin"})
    """Seconds a call to a worker may take beyond its own time limit before the worker counts as
    hung: it is killed and its episodes move to other nodes."""

    def validate(self) -> None:
        """Raise SandboxConfigError naming the field (and its flag) when a value cannot work."""
        if self.address is not None and (not isinstance(self.address, str) or not self.address.strip()):
            raise SandboxConfigError(f"--ray (cluster.address) {self.address!r}: give \"auto\" or the head "
                                     "node's address HOST:PORT")
        if not isinstance(self.retries, int) or self.retries < 0:
            raise SandboxConfigError(f"--ray-retries (cluster.retries) {self.retries!r}: must be an integer >= 0")
        if not isinstance(self.call_margin, (int, float)) or self.call_margin <= 0:
            raise SandboxConfigError(f"--ray-call-margin (cluster.call_margin) {self.call_margin!r}: "
                                     "must be a number of seconds > 0")


def split_legacy_sandbox(sandbox: dict[str, Any], cluster: dict[str, Any] | None = None
                         ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A saved `sandbox` mapping of an earlier version (Ray's fields inside it) as
    (sandbox fields, cluster fields); fields already given under `cluster` win."""
    sandbox = dict(sandbox)
    moved = {LEGACY_SANDBOX_FIELDS[k]: sandbox.pop(k) for k in list(sandbox) if k in LEGACY_SANDBOX_FIELDS}
    return sandbox, {**moved, **(cluster or {})}


@dataclass
class EpisodeSettings:
    """How a job's episodes are played and where: the part of `fixrl rollout`, `fixrl eval` and
    `fixrl probe` that is the same record in each (what to run -- suite, split, n, seed -- is
    each job's own)."""

    max_total_tokens: int | None = None
    """Token budget of an episode (past it: out_of_tokens)."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    """Who plays: a scripted policy or a model."""
    env: EnvConfig = field(default_factory=EnvConfig)
    """Episode settings: for a trained policy, the ones it was trained with (rename, prompt, schemas)."""
    sandbox: SandboxConfig = field(default_factory=lambda: SandboxConfig(pool_size=8))
    """Where the episodes run (sandboxes started as episodes need them, at most pool_size in lockstep)."""
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    """The Ray cluster that runs the environment side, if any."""

"""SandboxConfig: where an episode's sandboxes run, one typed record that every job's config
nests (GRPO, evaluation, the probe, the demo) instead of copying its fields."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fixrl.sandbox.factory import BACKENDS
from fixrl.sandbox.pool import SandboxPool


@dataclass
class SandboxConfig:
    """The sandboxes behind a run's episodes."""

    backend: Literal["local", "docker"] = "local"
    """`local` (bubblewrap, no daemon) or `docker` (a hardened container per sandbox)."""
    image: str | None = None
    """Docker image of the sandboxes; None: the task's own `image`, else `fixrl-sandbox:base`."""
    pool_size: int = 4
    """Sandboxes used at once: the number of episodes that advance in lockstep. With `ray`, each
    worker node's own `fixrl_sandbox` resource sets its share instead."""
    ray: str | None = None
    """Run the episodes' sandboxes, tool calls and checks on a Ray cluster (`fixrl[ray]`): "auto"
    (the cluster this machine belongs to) or the head's HOST:PORT. Unset: in this process."""
    ray_retries: int = 2
    """Times an episode whose worker node died is restarted on another node (same task, same seed,
    its tool calls replayed) before it ends as `error`."""
    ray_call_margin: float = 60.0
    """Seconds a call to a worker may take beyond its own time limit before the worker counts as
    hung: it is killed and its episodes move to other nodes."""

    def validate(self) -> None:
        """Raise SandboxConfigError naming the field when a value cannot work."""
        if self.backend not in BACKENDS:
            raise SandboxConfigError(f"sandbox backend {self.backend!r}: use one of {', '.join(BACKENDS)}")
        if not isinstance(self.pool_size, int) or self.pool_size < 1:
            raise SandboxConfigError(f"pool_size {self.pool_size!r}: must be an integer >= 1")
        if self.ray is not None and (not isinstance(self.ray, str) or not self.ray.strip()):
            raise SandboxConfigError(f"ray {self.ray!r}: give \"auto\" or the head node's address HOST:PORT")
        if not isinstance(self.ray_retries, int) or self.ray_retries < 0:
            raise SandboxConfigError(f"ray_retries {self.ray_retries!r}: must be an integer >= 0")
        if not isinstance(self.ray_call_margin, (int, float)) or self.ray_call_margin <= 0:
            raise SandboxConfigError(f"ray_call_margin {self.ray_call_margin!r}: must be a number of seconds > 0")

    def open_pool(self, size: int | None = None) -> SandboxPool:
        """A pool of `size` sandboxes (default `pool_size`); the caller closes it (`with`)."""
        self.validate()
        return SandboxPool(size or self.pool_size, backend=self.backend, image=self.image)


class SandboxConfigError(ValueError):
    """A sandbox setting that cannot work (unknown backend, pool size below 1): the user's to fix.
    Not a SandboxError: nothing failed, and retrying would fail the same way."""

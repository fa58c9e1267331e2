"""SandboxConfig: where an episode's sandboxes run, one typed record that every job's config
nests (GRPO, evaluation, the probe, the demo) instead of copying its fields. Which cluster runs
them, if any, is the agent layer's `ClusterConfig` (harness.agent.settings), not a field here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fixrl.sandbox.base import SandboxConfigError
from fixrl.sandbox.factory import BACKENDS, image_unsupported
from fixrl.sandbox.pool import SandboxPool


@dataclass
class SandboxConfig:
    """The sandboxes behind a run's episodes."""

    backend: Literal["local", "docker"] = "local"
    """`local` (bubblewrap, no daemon) or `docker` (a hardened container per sandbox)."""
    image: str | None = None
    """Docker image of the sandboxes; None: the task's own `image`, else `fixrl-sandbox:base`."""
    pool_size: int = 4
    """Sandboxes used at once: the number of episodes that advance in lockstep. On a Ray cluster
    (`--ray`), each worker node's own `fixrl_sandbox` resource sets its share instead."""

    def validate(self) -> None:
        """Raise SandboxConfigError naming the field when a value cannot work."""
        if self.backend not in BACKENDS:
            raise SandboxConfigError(f"sandbox backend {self.backend!r}: use one of {', '.join(BACKENDS)}")
        if not isinstance(self.pool_size, int) or self.pool_size < 1:
            raise SandboxConfigError(f"pool_size {self.pool_size!r}: must be an integer >= 1")
        why = image_unsupported(self.backend, self.image)
        if why:
            raise SandboxConfigError(f"--image {self.image}: {why}")

    def open_pool(self, size: int | None = None) -> SandboxPool:
        """A pool of `size` sandboxes (default `pool_size`); the caller closes it (`with`)."""
        self.validate()
        return SandboxPool(size or self.pool_size, backend=self.backend, image=self.image)


__all__ = ["SandboxConfig", "SandboxConfigError"]

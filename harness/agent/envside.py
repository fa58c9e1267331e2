"""The environment side of episodes, as the agent loop sees it: a small Protocol whose calls
return futures, so that every live episode's tool call runs at once while the loop waits.

The loop (`harness.agent.loop`) keeps the policy, the tokens and the trajectories; an
EnvSide keeps everything else: sandboxes, `ToolEnv`s, hidden checks. `LocalEnvSide`
(`harness.agent.local_rollouts`) runs them on threads over a sandbox pool in this process; a cluster
implementation runs them in actors on other machines. Episodes are named by the loop's integer
key, unique within one `run_episodes` call.
"""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from fixrl.envs.types import EpisodeInfo, Malformed, StepResult, ToolCall
from fixrl.tasks import Task


@dataclass(frozen=True)
class Started:
    """An episode ready for its first turn."""

    messages: list[dict]
    """The system prompt and the issue, as chat messages."""
    tools: list[dict]
    """The tools' JSON schemas for the chat template (empty when the env config hides them)."""
    view: Any
    """The environment as a policy may look at it in `Policy.start` (scripted plans read the
    workspace through it); the ToolEnv itself locally, a proxy on a cluster."""


class EnvSide(Protocol):
    capacity: int
    """Episodes that may be live at once (the sandboxes behind them)."""

    def start(self, key: int, task: Task, seed: int) -> Future[Started]:
        """Start an episode of `task` (its sandbox, setup, renaming). The future raises
        SandboxError when the sandbox could not be started."""
        ...

    def step(self, key: int, call: ToolCall | Malformed) -> Future[StepResult]:
        """Send one tool call; the future holds the observation (SandboxError: the sandbox died)."""
        ...

    def finish(self, key: int, status: str | None) -> Future[tuple[float, EpisodeInfo]]:
        """End the episode (`status`: why the loop ended it, e.g. `out_of_tokens`; None when the
        env ended it) and score it with the hidden check; the episode's resources are released."""
        ...

    def abort(self, key: int, error: str) -> EpisodeInfo:
        """Give up on an episode after a failure or an interruption: release its sandbox (as
        broken) and return what is known of it, with outcome `error` -- never a score."""
        ...

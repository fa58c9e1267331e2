"""Rollouts in one process: `LocalRollouts`, the default implementation of the `Rollouts` seam,
and `LocalEnvSide`, its environment side (ToolEnvs on worker threads over a SandboxPool).

    with LocalRollouts(suite, EnvConfig(rename=True), SandboxConfig(pool_size=8)) as rollouts:
        trajs = rollouts.run(policy, suite.split("heldout"), n=8, seed=0)
        evals = rollouts.with_env(other_env_config)   # the same sandboxes, other episode settings

The pool's sandboxes are reused across `run` calls (a training run keeps one pool for all its
steps and its periodic evaluations). Hidden checks run in the pool's own check sandboxes (local
backend: forking sandboxes with pytest imported; Docker: a new container each), unless the env
config asks for another backend than the pool's.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable, Sequence

from fixrl import tasks as tasks_pkg
from fixrl.envs import EnvConfig, ToolEnv
from fixrl.envs.types import EpisodeInfo, Malformed, StepResult, ToolCall
from fixrl.harness.agent.envside import Started
from fixrl.harness.agent.loop import run_episodes
from fixrl.harness.agent.policies import Policy
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.sandbox import SandboxConfig, SandboxError, SandboxPool
from fixrl.tasks import Suite, Task
from fixrl.tasks.check.images import check_images

log = logging.getLogger(__name__)


@dataclasses.dataclass
class _Live:
    stack: ExitStack
    env: ToolEnv | None = None


class LocalEnvSide:
    """ToolEnvs over `pool`, each call on a thread of its own (at most `pool.size` at once)."""

    def __init__(self, suite: Suite | None, env_config: EnvConfig, pool: SandboxPool, workdir: Path) -> None:
        self.suite = suite
        self.env_config = env_config
        self.pool = pool
        self.capacity = pool.size
        self.workdir = workdir
        self._live: dict[int, _Live] = {}
        self._lock = threading.Lock()
        self._threads = ThreadPoolExecutor(max_workers=pool.size, thread_name_prefix="fixrl-episode")
        wanted = env_config.check_backend
        self._checks = pool.check_sandbox if wanted in (None, pool.backend) else None

    def start(self, key: int, task: Task, seed: int) -> Future[Started]:
        return self._threads.submit(self._start, key, task, seed)

    def step(self, key: int, call: ToolCall | Malformed) -> Future[StepResult]:
        return self._threads.submit(self._env(key).step, call)

    def finish(self, key: int, status: str | None) -> Future[tuple[float, EpisodeInfo]]:
        return self._threads.submit(self._finish, key, status)

    def abort(self, key: int, error: str) -> EpisodeInfo:
        with self._lock:
            live = self._live.pop(key, None)
        info = live.env.info if live is not None and live.env is not None else EpisodeInfo(task_id="")
        info = dataclasses.replace(info, outcome="error", exit_status="error", error=error, hidden_pass=None)
        if live is not None:
            _release(live.stack, SandboxError(error))
        return info

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            live, self._live = list(self._live.values()), {}
        for lv in live:
            _release(lv.stack, None)

    def env(self, key: int) -> ToolEnv:
        """The ToolEnv of a live episode (a cluster worker answers its policy's view from it)."""
        return self._env(key)

    def _env(self, key: int) -> ToolEnv:
        env = self._live[key].env
        assert env is not None, f"episode {key} has not started"
        return env

    def _start(self, key: int, task: Task, seed: int) -> Started:
        t0 = time.monotonic()
        live = _Live(ExitStack())
        with self._lock:
            self._live[key] = live
        ws = tasks_pkg.materialize(task, self.workdir / f"ep{key}", "buggy", cache=True)
        sb = live.stack.enter_context(self.pool.acquire(ws, image=task.sandbox_image))
        checks = functools.partial(self._checks, image=task.sandbox_image) if self._checks is not None else None
        live.env = ToolEnv(task, sb, self.env_config, suite=self.suite, seed=seed, check_sandbox=checks)
        messages, tools = live.env.reset()
        # A sandbox from the pool, the buggy tree in it, setup and renaming: the time an episode
        # holds its sandbox before the first tool call (`info.seconds` has tools and check too).
        live.env.info.seconds["start"] = time.monotonic() - t0
        return Started(messages, tools, live.env)

    def _finish(self, key: int, status: str | None) -> tuple[float, EpisodeInfo]:
        env = self._env(key)
        if status is not None:
            env.end(status)
        reward, info = env.finish()
        with self._lock:
            live = self._live.pop(key)
        # The env records sandbox failures of the episode itself as outcome "error": tell the
        # pool, so that it replaces the sandbox instead of reusing it.
        failed = info.exit_status == "error"
        _release(live.stack, SandboxError(info.error or "sandbox failed") if failed else None)
        return reward, info


def _release(stack: ExitStack, exc: BaseException | None) -> None:
    """Give the sandbox back; with `exc` the pool learns that it failed and replaces it."""
    try:
        if exc is None:
            stack.close()
        else:
            stack.__exit__(type(exc), exc, exc.__traceback__)
    except Exception as e:  # noqa: BLE001 - a failing release must not lose the episode
        log.warning("releasing an episode's sandbox failed: %s", e)


class LocalRollouts:
    """Episodes in this process: the lockstep loop over one SandboxPool, kept across `run` calls.

    `pool`: share an open pool instead of opening one from `sandbox` (the caller closes it)."""

    def __init__(self, suite: Suite | None, env: EnvConfig | None = None, sandbox: SandboxConfig | None = None,
                 *, max_total_tokens: int | None = None, pool: SandboxPool | None = None) -> None:
        self.suite = suite
        self.env = env if env is not None else EnvConfig()
        self.sandbox = sandbox if sandbox is not None else SandboxConfig()
        self.max_total_tokens = max_total_tokens
        self._pool = pool
        self._owns_pool = pool is None
        self._parent: LocalRollouts | None = None

    @property
    def pool(self) -> SandboxPool:
        if self._parent is not None:
            return self._parent.pool
        if self._pool is None:
            self._pool = self.sandbox.open_pool()
        return self._pool

    @property
    def backend(self) -> str:
        return self.sandbox.backend

    def with_env(self, env: EnvConfig, *, max_total_tokens: int | None = None) -> LocalRollouts:
        """Rollouts over the same sandboxes with other episode settings (closing it is a no-op)."""
        child = LocalRollouts(self.suite, env, self.sandbox,
                              max_total_tokens=max_total_tokens if max_total_tokens is not None
                              else self.max_total_tokens)
        child._parent, child._owns_pool = self, False
        return child

    def warm(self, workspace: Path, check_prelude: str | None = None) -> int:
        """Start the pool's sandboxes before the first run (see SandboxPool.warm)."""
        return self.pool.warm(workspace, image=self.sandbox.image, check_prelude=check_prelude)

    def run(self, policy: Policy, tasks: Sequence[Task], n: int, seed: int = 0, *,
            progress: Callable[[Trajectory], None] | None = None) -> list[Trajectory]:
        """n episodes of each task, ordered by (task, sample); see `run_episodes`."""
        check_images(tasks, self.sandbox.backend, self.sandbox.image)
        with tempfile.TemporaryDirectory(prefix="fixrl-rollout-") as tmp:
            side = LocalEnvSide(self.suite, self.env, self.pool, Path(tmp))
            try:
                return run_episodes(policy, tasks, n, env=side, seed=seed,
                                    max_total_tokens=self.max_total_tokens, progress=progress)
            finally:
                side.close()

    def close(self) -> None:
        if self._owns_pool and self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> LocalRollouts:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

"""Fixtures of the env tests: the small suite of envkit.py, loaded once, and envs over it."""
from __future__ import annotations

import pytest
from envkit import build_suite


@pytest.fixture(scope="session")
def mini_suite(tmp_path_factory):
    from fixrl import tasks

    return tasks.load_suite(build_suite(tmp_path_factory.mktemp("envmini")))


@pytest.fixture
def make_env(mini_suite):
    """make_env(task_id, rules=None, **config) -> a ToolEnv over a fresh local sandbox (closed at
    teardown); `rules`: EditRules fields replacing the task's."""
    import contextlib

    from fixrl.envs import EnvConfig, episode_env

    stack = contextlib.ExitStack()

    def make(task_id: str = "clamp-minmax", backend: str = "local", seed: int = 0,
             check_sandbox=None, rules: dict | None = None, **config):
        from fixrl.tasks.format.schema import EditRules

        task = mini_suite.get(task_id)
        if rules is not None:  # the task with other edit rules (a copy: the suite is shared)
            task = task.model_copy(update={"rules": EditRules(**rules)})
        return stack.enter_context(episode_env(task, EnvConfig(**config), mini_suite, backend=backend,
                                               seed=seed, check_sandbox=check_sandbox))

    with stack:
        yield make

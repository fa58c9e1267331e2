"""Fixtures of the env tests: the small suite of envkit.py, loaded once, envs over it (or over
another suite), and the same env with every edit rule relaxed on each check backend."""
from __future__ import annotations

import contextlib

import pytest
from envkit import build_suite

from fixrl.envs import EnvConfig, episode_env
from fixrl.sandbox import SandboxPool
from fixrl.tasks.format.loader import build_environments
from fixrl.tasks.format.schema import RULE_NAMES, EditRules

RELAXED = {"relax": list(RULE_NAMES), "reason": "the guard alone is tested"}
"""Edit rules that refuse nothing: what is left to judge an edit is the check's runtime guard."""


@pytest.fixture(scope="session")
def mini_suite(tmp_path_factory):
    from fixrl import tasks

    return tasks.load_suite(build_suite(tmp_path_factory.mktemp("envmini")))


@pytest.fixture
def make_env(mini_suite):
    """make_env(task_id, rules=None, suite=None, **config) -> a ToolEnv over a fresh sandbox
    (closed at teardown); `rules`: EditRules fields replacing the task's; `suite`: another suite
    than the mini suite, its task's `environment:` built for the backend first."""
    stack = contextlib.ExitStack()

    def make(task_id: str = "clamp-minmax", backend: str = "local", seed: int = 0,
             check_sandbox=None, rules: dict | None = None, suite=None, **config):
        suite = suite or mini_suite
        task = suite.get(task_id)
        if rules is not None:  # the task with other edit rules (a copy: the suite is shared)
            task = task.model_copy(update={"rules": EditRules(**rules)})
        broken = build_environments([task], backend)
        if broken:
            pytest.fail("; ".join(broken.values()))
        return stack.enter_context(episode_env(task, EnvConfig(**config), suite, backend=backend,
                                               seed=seed, check_sandbox=check_sandbox))

    with stack:
        yield make


@pytest.fixture(scope="module")
def forking_pool():
    with SandboxPool(1, backend="local") as pool:  # its check sandboxes fork pytest
        yield pool


@pytest.fixture(params=["local", "forking", pytest.param("docker", marks=pytest.mark.docker)])
def relaxed_env(request, make_env):
    """relaxed_env(task_id="clamp-minmax", suite=None, **config) -> `make_env`'s ToolEnv with
    every edit rule relaxed (RELAXED), its check on the backend the parameter names: a fresh
    local sandbox, the forking pool's check sandbox (the rollouts' kind), or Docker."""
    def make(task_id: str = "clamp-minmax", suite=None, **config):
        if request.param == "docker":
            request.getfixturevalue("docker_available")
            config["backend"] = "docker"
        elif request.param == "forking":
            config["check_sandbox"] = request.getfixturevalue("forking_pool").check_sandbox
        return make_env(task_id, rules=RELAXED, suite=suite, **config)
    return make

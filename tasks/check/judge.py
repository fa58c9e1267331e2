"""Judging a repository state held in a host directory: the one path every verdict takes.

Rollouts (`envs.ToolEnv.finish`) and validation (`tasks.check.validate`) both call `judge_tree`, with
a check sandbox from the same source (`SandboxPool.check_sandbox`: on the local backend a
reused forking sandbox, on Docker a new container), so that "valid" means "the oracle passes
in training": same host-side preparation, same kind of sandbox, same runner.

What this does not guarantee: that the state in `tree` is the one meant; the caller writes it
(the buggy or fixed tree, plus the agent's carried changes).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager

from fixrl.tasks.check.run import CheckResult, clear_check_paths, run_check
from fixrl.tasks.format.materialize import run_setup

if TYPE_CHECKING:
    from fixrl.sandbox.base import Sandbox
    from fixrl.tasks.check.guard import GuardSpec
    from fixrl.tasks.format.schema import Task

OpenCheck = Callable[[Path], ContextManager["Sandbox"]]
"""Opens a sandbox holding a copy of a host directory, e.g. `pool.check_sandbox`."""


def judge_tree(task: Task, tree: Path, open_check: OpenCheck, answer: str | None = None,
               guard: GuardSpec | None = None) -> CheckResult:
    """The check's verdict on the state in `tree` (a host directory this call may change: the
    hidden check files' paths are cleared in it first). The task's setup runs in the check
    sandbox before the check. `guard`: the files changed from the buggy state and what each
    may do at run time (tasks.check.guard). Raises TaskError when setup fails and SandboxError when
    the sandbox could not be opened (run_check itself turns a sandbox failure into "error")."""
    clear_check_paths(task, tree)
    with open_check(tree) as sb:
        if task.setup:  # run_check expects the state to judge ready, setup included
            run_setup(task, sb)
        return run_check(task, sb, answer, paths_cleared=not task.setup, guard=guard)

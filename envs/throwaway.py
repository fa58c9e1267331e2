"""The `test` tool's throwaway workspace: a command runs on the workspace as the agent's edits
left it, and everything it wrote is discarded afterwards.

Only `edit` changes what the hidden check judges. Code the agent planted runs during `test`
(the public tests import it); were its writes kept, one `test` call could try candidate
repairs against the public tests and write back the one that passes (past the edit budget),
or plant a module that is carried into the check. So `run_discarded` records the workspace's
changes before the command (`Sandbox.changed_files`: the edits, setup's writes, the renaming),
runs it (the `test` tool: the public tests under the check's own runner and guard,
`tasks.check.reward.run_public_tests`, so nothing inside tells `test` from the check), then
resets the sandbox (the backend kills the command's leftover processes, clears
/tmp and restores the pristine workspace), runs the task's setup again (its writes outside the
workspace went with /tmp) and writes the recorded changes back. Backend-agnostic: it uses the
Sandbox protocol only.

What this does NOT guarantee: file modes and binary contents the agent's edits could not make
anyway (edits are text) come back as text; a backend that cannot kill a leftover process
(a non-root host without bubblewrap or a cgroup, see sandbox.local) may let one write after
the restore -- the check still runs on a fresh copy of only the carried changes.
"""
from __future__ import annotations

import shlex
from typing import Callable, TypeVar

from fixrl.sandbox.base import Sandbox, SandboxError
from fixrl.tasks.format.loader import TaskError
from fixrl.tasks.format.materialize import run_setup
from fixrl.tasks.format.schema import Task

T = TypeVar("T")


def run_discarded(sb: Sandbox, task: Task, run: Callable[[dict[str, str | None]], T]) -> T:
    """`run(changes)` (the workspace's changes as `changed_files` returns them) in `sb`;
    afterwards the workspace holds exactly what it held before."""
    before = sb.changed_files()
    try:
        return run(before)
    finally:
        restore(sb, task, before)


def restore(sb: Sandbox, task: Task, changes: dict[str, str | None]) -> None:
    """Reset `sb` and put `changes` (as `changed_files` returns them) back. A setup that fails
    now ran fine before on the same files: the sandbox's failure, not the agent's."""
    sb.reset()
    if task.setup:
        try:
            run_setup(task, sb)
        except TaskError as e:
            raise SandboxError(f"setup failed again while restoring the workspace after `test`: {e}") from e
    gone = [path for path, text in changes.items() if text is None]
    for path, text in changes.items():
        if text is not None:
            sb.write_file(path, text)
    if gone:
        res = sb.exec("rm -rf -- " + " ".join(shlex.quote(p) for p in gone), timeout=60)
        if res.exit_code != 0:
            raise SandboxError(f"could not restore deleted files after `test`: {res.output[-200:]}")

"""The reward: what the agent submitted, judged by the task's hidden check, as a typed `Score`.

`score(task, submission, open_check)` takes the submitted changes (already in the task's
original names), decides which are carried into the check (tasks.check.carry), judges them by
the task's edit rules (tasks.check.rules: a state that breaks them is a fail and no check runs),
builds the runtime guard's allowances (tasks.check.guard), writes them onto a fresh buggy tree
and runs the check there through `tasks.check.judge.judge_tree`, retrying when the sandbox
fails. Episodes (`envs.ToolEnv.finish`) and validation (`tasks.check.validate`, the buggy state
and the reference fix) both come through here, so that "valid" means "the oracle passes in
training".

`run_public_tests` is the `test` tool's side of the same room: the public tests run under the
check's own runner and runtime guard, so that code under test cannot tell `test` from the check.

What it does not do: read the agent's sandbox (the caller collects the changes and maps renamed
names back) or turn the score into a number (EnvConfig.reward does).
An `error` outcome is never a verdict on the submission: callers retry or leave it out.
"""
from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Mapping

from fixrl.sandbox.base import Sandbox, SandboxError
from fixrl.tasks.check.carry import carry
from fixrl.tasks.check.guard import GuardSpec, spec_for
from fixrl.tasks.check.judge import OpenCheck, judge_tree
from fixrl.tasks.check.rules import Violation, for_task, judge_changes
from fixrl.tasks.check.run import GUARD_STOPPED, CheckResult, Outcome, run_check
from fixrl.tasks.format.loader import TaskError
from fixrl.tasks.format.materialize import materialize
from fixrl.tasks.format.reference import reference
from fixrl.tasks.format.schema import Check, Task

__all__ = ["GUARD_STOPPED", "Score", "Submission", "guard_spec", "rule_violations", "run_public_tests", "score"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Submission:
    """What is judged: file changes on the buggy repository and, for question tasks, the answer."""

    changes: Mapping[str, str | None] = field(default_factory=dict)
    """Path (relative to the repository root) -> new text, None: deleted; in the task's original
    names (renaming undone)."""
    answer: str | None = None


@dataclass(frozen=True)
class Score:
    """The verdict on one submission."""

    outcome: Outcome
    """pass | fail | error (the sandbox or the task failed, not the submission)."""
    reason: str = ""
    """Why it did not pass, in one line ('' for a pass)."""
    carried: Mapping[str, str | None] = field(default_factory=dict)
    """The changes that went into the check."""
    dropped: Mapping[str, str] = field(default_factory=dict)
    """Submitted changes left out of the check -> why (tasks.check.carry)."""
    violations: tuple[Violation, ...] = ()
    """How the carried changes break the task's edit rules; non-empty means a fail without a check."""
    check: CheckResult | None = None
    """The check's result (the last attempt's), None when no check ran to the end."""
    partial_credit: float | None = None
    """Share of the check's named tests that passed (every test seen when it names none)."""
    error_kind: Literal["sandbox", "task", "crash"] | None = None
    """For an error: the sandbox failed (after the retries), the task itself could not be
    built or set up (TaskError), or the check crashed (a bug)."""

    @property
    def hidden_pass(self) -> bool | None:
        """Whether the hidden check passed; None for an error."""
        return None if self.outcome == "error" else self.outcome == "pass"

    @property
    def broken_rules(self) -> list[str]:
        """The violations as "rule: path:line: message"."""
        return [str(v) for v in self.violations]


def score(task: Task, submission: Submission, open_check: OpenCheck, *, retries: int = 2) -> Score:
    """Judge `submission` on a fresh copy of the task's buggy repository in a sandbox from
    `open_check` (one no agent has used). A sandbox failure is retried `retries` times before
    the outcome is `error`; a check that reports a sandbox error counts as one."""
    attempts = max(1, retries + 1)
    last_error, dropped = "", {}
    for attempt in range(attempts):
        dropped = {}
        try:
            got = _attempt(task, submission, open_check, dropped)
        except SandboxError as e:
            last_error = f"check sandbox failed (attempt {attempt + 1}/{attempts}): {e}"
            log.warning("%s: %s", task.id, last_error)
            continue
        except TaskError as e:
            return Score("error", f"the check crashed: {type(e).__name__}: {e}", dropped=dropped, error_kind="task")
        except Exception as e:  # noqa: BLE001 - a bug in the check must cost one episode, not a run
            log.exception("%s: the check crashed", task.id)
            return Score("error", f"the check crashed: {type(e).__name__}: {e}", dropped=dropped, error_kind="crash")
        if got.check is not None and got.check.outcome == "error":
            last_error = f"check reported a sandbox error (attempt {attempt + 1}/{attempts}): " \
                         f"{got.check.output[-300:]}"
            continue
        return got
    return Score("error", last_error, dropped=dropped, error_kind="sandbox")


def _attempt(task: Task, submission: Submission, open_check: OpenCheck, dropped: dict[str, str]) -> Score:
    with tempfile.TemporaryDirectory(prefix="fixrl-check-") as tmp:
        tree = materialize(task, Path(tmp) / "repo", "buggy", cache=True)
        carried = carry(task, submission.changes, tree, dropped)
        violations = rule_violations(task, carried)
        if violations:
            return Score("fail", "the changes break the task's edit rules", carried, dict(dropped),
                         tuple(violations), partial_credit=0.0)
        guard = guard_spec(task, carried)
        for path, text in carried.items():
            target = tree / path
            if text is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
        result = judge_tree(task, tree, open_check, submission.answer, guard=guard)
    credit = result.fraction_passed(list(task.check.tests) or None)
    return Score(result.outcome, result.reason, carried, dict(dropped), check=result, partial_credit=credit)


def rule_violations(task: Task, changes: Mapping[str, str | None]) -> list[Violation]:
    """How `changes` (path -> new text, original names) break the task's edit rules, judged
    against the buggy originals; rules the task relaxes are left out."""
    ctx = for_task(task)
    return judge_changes({path: (ctx.original(path), text) for path, text in changes.items()},
                         task.rules, ctx.modules)


def guard_spec(task: Task, carried: Mapping[str, str | None]) -> GuardSpec:
    """The check's runtime guard allowances for the carried files: what each one's buggy
    original or the reference fix of it does (tasks.check.guard)."""
    ctx = for_task(task)
    ref = reference(task) if task.fix else None
    changes = {path: (ctx.original(path), ref.fixed.get(path) if ref else None)
               for path, text in carried.items() if text is not None}
    return spec_for(changes, ctx.frame_readers)


def run_public_tests(task: Task, sb: Sandbox, command: str, timeout: float,
                     changes: Mapping[str, str | None]) -> CheckResult:
    """Run `command` (the public tests) in `sb` as the check runs its own: a pytest command goes
    through the same runner, private directory, environment and runtime guard (`changes`: the
    workspace's changed files, path -> text, for the guard's allowances), so nothing inside tells
    the two apart; any other command runs as it is. No hidden file is written and the outcome
    is no verdict: the caller uses the output and the exit status."""
    public = task.model_copy(update={"check": Check(command=command, timeout=timeout)})
    return run_check(public, sb, guard=guard_spec(task, {p: t for p, t in changes.items() if p.endswith(".py")}))

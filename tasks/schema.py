"""The task format: what a user writes in a task YAML file.

Every field is validated by pydantic; `tasks.load_suite` turns a validation error into a
message that names the file and the field. Paths are relative to the suite directory.
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GitRepo(_Strict):
    """A git repository checked out at a commit (history is stripped before the agent sees it)."""

    git: str
    """Path to a local git repository, relative to the suite directory."""
    commit: str
    """Commit (or any rev-parse-able ref) to check out."""


class Check(_Strict):
    """The hidden check. Its files exist only in the check's own sandbox, never in the agent's."""

    files: dict[str, str] = Field(default_factory=dict)
    """Destination path inside the repository -> source path relative to the suite directory
    (or the file's text inline, when the value contains a newline)."""
    command: str
    """The check command, run in the repository root. For pytest commands the runner adds its
    own report; pass requires exit status 0 AND every test in `tests` reported as passed."""
    tests: list[str] = Field(default_factory=list)
    """Test node ids the check must see pass (FAIL_TO_PASS + PASS_TO_PASS). Empty: exit status
    only, which is allowed for non-pytest checks such as a question's answer checker."""
    timeout: float = 120.0
    """Seconds before the check is killed and counted as a fail."""


class Limits(_Strict):
    max_turns: int = 8
    """Assistant turns before the episode ends as out of turns."""
    max_edits: int | None = None
    """Applied edits allowed per episode; later edits use a turn and change nothing. None: no cap."""
    tool_timeout: float = 60.0
    """Seconds each tool call may run."""
    setup_timeout: float = 300.0


class Task(_Strict):
    id: str
    """Unique within a suite."""
    repo: str | GitRepo
    """A directory (relative to the suite) holding the clean repository, or a git repo + commit."""
    image: str | None = None
    """Docker image for this task's sandboxes; default: the base sandbox image."""
    setup: list[str] = Field(default_factory=list)
    """Commands run in the repository after the bug is applied, before the agent starts."""
    kind: Literal["fix", "question"] = "fix"
    issue: str
    """What the agent is told."""
    public_tests: str = "python -m pytest -q"
    """The command the agent's `test` tool runs."""
    check: Check
    bug: str | None = None
    """A unified diff (or a path to a .patch file) that turns the clean repo into the buggy one."""
    bug_files: dict[str, str] = Field(default_factory=dict)
    """Alternative to `bug`: destination path -> buggy file content (or a path to it)."""
    fix: str | None = None
    """The reference fix: a unified diff against the buggy repo (or a path to a .patch file).
    Required for fix tasks."""
    answer: str | None = None
    """For question tasks: the reference answer (the check verifies the agent's answer; this is
    what the oracle submits)."""
    function: str | None = None
    """The buggy function's name, used for per-episode renaming; None disables renaming."""
    file: str | None = None
    """The file holding the bug, relative to the repository root."""
    split: Literal["train", "heldout"] = "train"
    tags: list[str] = Field(default_factory=list)
    """Free labels; a tag `family:NAME` names the bug family (the generator's mutation operator)."""
    limits: Limits = Field(default_factory=Limits)

    # Set by the loader, not by users.
    suite_dir: Path | None = Field(default=None, exclude=True)
    source_file: Path | None = Field(default=None, exclude=True)

    @property
    def family(self) -> str | None:
        for tag in self.tags:
            if tag.startswith("family:"):
                return tag.split(":", 1)[1]
        return None

"""Records passed between the agent loop (harness/) and the tool environment (envs/)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from fixrl.sandbox.base import Sandbox
    from fixrl.tasks.format.schema import Task

ExitStatus = Literal["submitted", "out_of_turns", "out_of_tokens", "malformed", "error"]
Outcome = Literal["pass", "fail", "error"]


@dataclass(frozen=True)
class ToolCall:
    """A parsed tool call: the tool's name and its JSON arguments (not yet validated)."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Malformed:
    """The policy wrote something that is not a valid tool call. `error` says what was wrong and
    what form is expected; the env returns it as the observation and counts it."""

    error: str


@dataclass(frozen=True)
class StepResult:
    observation: str
    done: bool


@dataclass
class EpisodeInfo:
    """What happened in one episode; filled by ToolEnv, read by train/ and evals/."""

    task_id: str
    actions: list[str] = field(default_factory=list)
    """One short line per turn: tool name and key argument, e.g. `read src/x.py`, `edit src/x.py`."""
    reads: int = 0
    tests: int = 0
    edits: int = 0
    """Applied edits (refused edits past the budget are not counted here)."""
    refused_edits: int = 0
    failed_edits: int = 0
    """Edits whose `old` text was not found or was ambiguous (the file unchanged)."""
    policy_refusals: int = 0
    """Edits refused because their result broke the task's change policy (the file unchanged);
    they always count against the edit budget."""
    malformed: int = 0
    turns: int = 0
    submitted: bool = False
    answer: str | None = None
    reads_before_first_edit: int = 0
    first_edit_right: bool | None = None
    """Whether the first applied edit was (part of) the reference fix; None if no edit or unknown."""
    exit_status: ExitStatus | None = None
    outcome: Outcome | None = None
    hidden_pass: bool | None = None
    public_pass: bool | None = None
    check_tests: dict[str, str] = field(default_factory=dict)
    """Per-test outcome of the hidden check ('passed', 'failed', 'error', 'skipped', 'missing')."""
    partial_credit: float | None = None
    error: str | None = None
    renamed: dict[str, str] = field(default_factory=dict)
    """Per-episode renaming: original name -> name the agent saw."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Seconds spent: 'tools', 'check'."""
    dropped_files: dict[str, str] = field(default_factory=dict)
    """Agent-changed files not carried into the hidden check -> why (test files, new files that
    could shadow modules, changes that reach for the test runner; see envs.changes)."""
    policy_violations: list[str] = field(default_factory=list)
    """Why the submitted changes broke the task's change policy ("rule: path:line: message",
    tasks.check.rules); non-empty means the episode failed without running the check."""
    sample: int | None = None
    """Which of a task's n episodes this is (0..n-1); set by the agent loop."""
    seed: int | None = None
    """The episode's own seed (renaming, sampling); set by the agent loop."""
    cut_turns: list[int] = field(default_factory=list)
    """Indices of the assistant turns cut at the token limit (closed with an unsampled
    `<|im_end|>`); set by the agent loop."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys of a stored record that are not fields here (a recipe's own bookkeeping, a newer
    version's fields): kept so that loading and saving a file changes nothing."""

    @property
    def reward(self) -> float:
        return 1.0 if self.outcome == "pass" else 0.0

    @property
    def errored(self) -> bool:
        return self.outcome == "error"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the same keys as the files written before this was a dataclass)."""
        d = dataclasses.asdict(self)
        extra = d.pop("extra")
        return {**extra, **d}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EpisodeInfo:
        """Inverse of `to_dict`; unknown keys go to `extra`, missing ones take their defaults."""
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        known.setdefault("task_id", "")
        extra = {**dict(d.get("extra") or {}), **{k: v for k, v in d.items() if k not in names and k != "extra"}}
        return cls(**known, extra=extra)


class ToolContext(Protocol):
    """What a tool handler may use of its episode (`ToolEnv` is the implementation): the sandbox,
    the budgets, and the notes it leaves for the episode's record. Tools see nothing else of the
    env, so a tool of your own written against this cannot depend on its insides."""

    task: Task
    sb: Sandbox
    info: EpisodeInfo
    max_edits: int | None
    """The episode's edit budget (None: unlimited)."""
    public_test_command: str

    @property
    def tool_names(self) -> list[str]: ...

    def tool_timeout(self, name: str) -> float:
        """Seconds a tool's command may take."""

    def edit_allowed(self) -> bool:
        """Whether the edit budget has room for one more edit."""

    def policy_refusal(self, path: str, after: str | None) -> str | None:
        """None when changing `path` to `after` complies with the task's change policy; else the
        refusal to show (counted against the edit budget)."""

    def note_edit(self, path: str, after: str, before: str) -> None:
        """An edit was applied."""

    def note_refused_edit(self, path: str) -> None:
        """An edit was refused because the budget is used up."""

    def note_failed_edit(self, path: str) -> None:
        """An edit could not be applied (the snippet was not found, ...)."""

    def note_test(self, passed: bool) -> None:
        """The public tests ran, and passed or not."""

"""Records passed between the agent loop (harness/) and the tool environment (envs/)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from fixrl.sandbox.base import Sandbox
    from fixrl.tasks.check.reward import Score
    from fixrl.tasks.format.schema import Task

DIFF_MAX_CHARS = 20_000
"""Longest `EpisodeInfo.diff` kept (a record per episode: a rewritten file must not bloat it)."""

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
    rule_refusals: int = 0
    """Edits refused because their result broke the task's edit rules (the file unchanged);
    they always count against the edit budget. Earlier versions stored it as `policy_refusals` (still read)."""
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
    could shadow modules, changes that reach for the test runner; see tasks.check.carry)."""
    rule_violations: list[str] = field(default_factory=list)
    """Why the submitted changes broke the task's edit rules ("rule: path:line: message",
    tasks.check.rules); non-empty means the episode failed without running the check."""
    reason: str = ""
    """The reward's one line on why the episode did not pass ('' for a pass or no verdict)."""
    diff: str = ""
    """The submitted changes as a unified diff against the buggy repository, in the task's
    original names (what the reward judged, before carrying); '' when nothing changed. Capped at
    DIFF_MAX_CHARS: it is for reading (`fixrl view`), and the reward never reads it."""
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

    # ---- the writers of the verdict and the loop's fields: every other field is the env's count

    def record_score(self, score: Score) -> None:
        """The reward's verdict on the submitted changes (tasks.check.reward.Score)."""
        self.outcome = score.outcome
        self.reason = score.reason
        self.hidden_pass = score.hidden_pass
        self.partial_credit = score.partial_credit
        self.dropped_files = dict(score.dropped)
        self.rule_violations = score.broken_rules
        if score.check is not None and score.outcome != "error":
            self.check_tests = dict(score.check.tests)
        if score.outcome == "error":
            self.error = score.reason

    def record_error(self, error: str) -> None:
        """The episode could not be scored: outcome `error` (left out of training and pass@k)."""
        self.outcome, self.error = "error", error

    def aborted(self, error: str) -> EpisodeInfo:
        """A copy ended by a failure outside the episode (its sandbox or worker lost)."""
        return dataclasses.replace(self, outcome="error", exit_status="error", error=error, hidden_pass=None)

    def record_sample(self, task_id: str, sample: int, seed: int, cut_turns: list[int]) -> None:
        """Which episode of the run this is (the agent loop's fields)."""
        self.task_id = self.task_id or task_id
        self.sample, self.seed, self.cut_turns = sample, seed, list(cut_turns)

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
        """Inverse of `to_dict`; unknown keys go to `extra`, missing ones take their defaults.
        Records written before the edit rules were renamed have their old keys read."""
        d = _renamed_keys(d)
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        known.setdefault("task_id", "")
        extra = {**dict(d.get("extra") or {}), **{k: v for k, v in d.items() if k not in names and k != "extra"}}
        return cls(**known, extra=extra)


_RENAMED = {"policy_refusals": "rule_refusals", "policy_violations": "rule_violations"}
"""Keys of records written before the edit rules had their name -> the fields now."""


def _renamed_keys(d: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        new = _RENAMED.get(k)
        out[new if new and new not in d else k] = v
    return out


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

    def rule_refusal(self, path: str, after: str | None) -> str | None:
        """None when changing `path` to `after` complies with the task's edit rules; else the
        refusal to show (counted against the edit budget)."""

    def note_edit(self, path: str, after: str, before: str) -> None:
        """An edit was applied."""

    def note_refused_edit(self, path: str) -> None:
        """An edit was refused because the budget is used up."""

    def note_failed_edit(self, path: str) -> None:
        """An edit could not be applied (the snippet was not found, ...)."""

    def note_test(self, passed: bool) -> None:
        """The public tests ran, and passed or not."""

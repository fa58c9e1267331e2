"""ToolEnv: one episode of the agent on one task, over a sandbox that already holds the task's
buggy repository. Its reward is `tasks.check.reward.score`, called once at the end.

Lifecycle: `reset()` -> `step(call)` until `done` -> `finish()`. The env never raises for what
the policy sends (bad JSON, unknown tools, bad arguments, paths outside the workspace): those
are error observations, counted in `info.malformed` where the call itself was malformed. A
sandbox that fails during the episode ends it with exit status and outcome `error`.

The reward is computed on a fresh buggy copy with the agent's non-test changes applied
(`tasks.check.carry` says which are carried), in a sandbox no agent has used (a new one, or one
of the rollout pool's check sandboxes, reset), by `tasks.check.reward.score`. Infrastructure
failures there are retried and end as outcome `error` (reward 0.0, but training and pass@k leave
the episode out), never as a fail.
"""
from __future__ import annotations

import contextlib
import difflib
import logging
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Literal

from pydantic import ValidationError

from fixrl import tasks
from fixrl.envs import rename as rn
from fixrl.envs.reference import first_edit_right
from fixrl.envs.rename import Renaming
from fixrl.envs.tools import DEFAULT_TOOLS, Tool, ToolError, get_tools
from fixrl.envs.types import DIFF_MAX_CHARS, EpisodeInfo, ExitStatus, Malformed, StepResult, ToolCall
from fixrl.sandbox import open_sandbox
from fixrl.sandbox.base import Sandbox, SandboxError
from fixrl.tasks import is_test_path
from fixrl.tasks.check.reward import Submission, score
from fixrl.tasks.check.rules import for_task
from fixrl.tasks.format.schema import Task

log = logging.getLogger(__name__)

RewardFn = Callable[[EpisodeInfo], float]


@dataclass
class EnvConfig:
    """How episodes run and how they are scored. Task limits apply where a field is None."""

    max_turns: int | None = None
    """Tool calls (assistant turns) per episode; None: the task's `limits.max_turns`."""
    max_edits: int | None = None
    """Applied edits per episode, later edits use a turn and change nothing (the defence against
    stacking blind edits); None: the task's `limits.max_edits` (itself None = no cap)."""
    rename: bool = False
    """Rename the task's buggy function per episode to a random name from the suite's
    `rename_pool`, in the issue and every source file, so that a name carries no information
    about the fix. The check always runs on the original names."""
    obs_max_chars: int = 6000
    """Observations longer than this are cut in the middle with a visible marker."""
    max_malformed: int = 3
    """Malformed calls (unparseable, unknown tool, bad arguments) that end the episode."""
    tools: list[str] | None = None
    """Tool set by name; None: the suite's `tools` (default read, test, edit, submit)."""
    tool_timeouts: dict[str, float] = field(default_factory=dict)
    """Seconds per tool name, overriding the tool's own and the task's `limits.tool_timeout`.
    They bound the commands a tool runs in the sandbox (`test`, `list`, `search`; "path" for path
    resolution); file reads and writes are bounded by the sandbox backend itself."""
    reward: Literal["hidden", "public"] | RewardFn = "hidden"
    """`hidden`: 1.0 when the hidden check passes. `public`: 1.0 when the public test command
    exits 0 in the agent's own sandbox at the end (to study reward hacking; the hidden check
    still runs and fills `hidden_pass`). Or a function of the finished EpisodeInfo."""
    check_retries: int = 2
    """Extra attempts of the hidden check after a sandbox failure before the outcome is `error`."""
    public_check: bool = False
    """Run the public tests at the end to fill `info.public_pass` (always on for reward='public').
    Off: `public_pass` is the agent's last `test` result when no edit came after it."""
    system_prompt: str | None = None
    """Replaces the built-in system prompt; `{tools}`, `{max_turns}`, `{max_edits}` are filled in."""
    tool_schemas: bool = True
    """Give the chat template the tools' JSON schemas (Qwen2.5's template renders them into the
    system turn: 524 tokens for read, test, edit and submit). False: the system prompt alone
    tells the tools; for a tiny model trained from scratch, to which the schemas are only a long
    run of tokens to attend past, not for a real model, which learned to call tools from them."""
    check_backend: str | None = None
    """Backend of the default check sandbox; None: the same as the agent's sandbox."""


SYSTEM_PROMPT = """\
You are a software engineer working in a Python repository (your working directory is its root).
Tools: {tools}.
How to work: read the code the issue is about, run the tests to see what fails, make the smallest \
edit that fixes the cause (the `old` text must be copied exactly from the file), run the tests \
again, then submit. You have {max_turns} tool calls{edits}; each reply must be exactly one tool call."""

QUESTION_PROMPT = """\
You are a software engineer answering a question about a Python repository (your working \
directory is its root).
Tools: {tools}.
How to work: read the code the question is about, run it or its tests if that helps, then give \
your final answer with `submit` (argument `answer`). You have {max_turns} tool calls; each reply \
must be exactly one tool call."""


def truncate(text: str, max_chars: int) -> str:
    """Cut the middle of `text` to at most about `max_chars`, with a marker saying how much."""
    if len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    tail = max_chars - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n... [output truncated: {cut} characters omitted] ...\n{text[len(text) - tail:]}"


def _system_prompt(config: EnvConfig, task: Task, tools: list[str], max_turns: int, max_edits: int | None) -> str:
    if config.system_prompt is not None:
        template = config.system_prompt
    else:
        template = QUESTION_PROMPT if task.kind == "question" else SYSTEM_PROMPT
    edits = "" if max_edits is None else f" and {max_edits} edit{'s' if max_edits != 1 else ''}"
    if edits and task.limits.count_failed_edits:
        edits += " (an edit whose `old` text is not found counts too)"
    return template.format(tools=", ".join(f"`{n}`" for n in tools), max_turns=max_turns, edits=edits,
                           max_edits=max_edits if max_edits is not None else "unlimited")


def _reward(config: EnvConfig, info: EpisodeInfo) -> float:
    """The number training gets for a scored episode (EnvConfig.reward); 0.0 for an error."""
    if info.outcome == "error":
        return 0.0
    if callable(config.reward):
        return float(config.reward(info))
    if config.reward == "public":
        return 1.0 if info.public_pass else 0.0
    if config.reward == "hidden":
        return 1.0 if info.outcome == "pass" else 0.0
    raise ValueError(f"EnvConfig.reward: {config.reward!r} is not 'hidden', 'public' "
                     f"or a function of the episode info")


def _backend_of(sb: Sandbox) -> str:
    name = getattr(sb, "backend", None)
    if isinstance(name, str):
        return name
    return "docker" if "docker" in type(sb).__name__.lower() else "local"


class ToolEnv:
    """One episode: the tools and their budgets over the agent's sandbox, and the episode's
    record (`info`). `finish()` submits the agent's changes, in the task's original names, to
    the reward (`tasks.check.reward.score`) once and records its Score."""

    def __init__(self, task: Task, sb: Sandbox, config: EnvConfig | None = None, suite: Any = None,
                 check_sandbox: Callable[[Path], ContextManager[Sandbox]] | None = None,
                 seed: int = 0):
        self.task = task
        self.sb = sb
        self.config = config or EnvConfig()
        self.suite = suite
        self.seed = seed
        self.rng = random.Random(f"{seed}/{task.id}")
        names = self.config.tools or (list(getattr(suite, "tools", None) or []) or DEFAULT_TOOLS)
        self.tools: dict[str, Tool] = {t.name: t for t in get_tools(names)}
        self.max_turns = self.config.max_turns or task.limits.max_turns
        self.max_edits = self.config.max_edits if self.config.max_edits is not None else task.limits.max_edits
        self._check_sandbox = check_sandbox
        self.info = EpisodeInfo(task_id=task.id)
        self.done = False
        self.issue = task.issue
        self.public_test_command = task.public_tests
        self.renaming = Renaming()
        self._first_edit: tuple[str, str, str] | None = None  # (path, before, after) as seen
        self._last_test: bool | None = None
        self._finished: tuple[float, EpisodeInfo] | None = None
        self._reset_done = False
        self._after_setup: dict[str, str | None] = {}

    # ------------------------------------------------------------------ views for tools/plans

    @property
    def tool_names(self) -> list[str]:
        return list(self.tools)

    @property
    def function_name(self) -> str | None:
        """The buggy function's name as the agent sees it (renamed when renaming is on)."""
        return self.renaming.shown if self.renaming else self.task.function

    @property
    def edits_used(self) -> int:
        """Edits counted against the budget: applied ones, ones the edit rules refused, and
        failed ones where the task's `limits.count_failed_edits` says so."""
        failed = self.info.failed_edits if self.task.limits.count_failed_edits else 0
        return self.info.edits + self.info.rule_refusals + failed

    @property
    def edits_left(self) -> int | None:
        return None if self.max_edits is None else max(0, self.max_edits - self.edits_used)

    def edit_allowed(self) -> bool:
        return self.max_edits is None or self.edits_used < self.max_edits

    def tool_timeout(self, name: str) -> float:
        if name in self.config.tool_timeouts:
            return float(self.config.tool_timeouts[name])
        tool = self.tools.get(name)
        if tool is not None and tool.timeout is not None:
            return float(tool.timeout)
        base = float(self.task.limits.tool_timeout)
        return min(base, 15.0) if name == "path" else base

    def to_original(self, text: str) -> str:
        """Map text the agent saw (renamed) back to the task's original names."""
        return self.renaming.to_original(text)

    def to_shown(self, text: str) -> str:
        """Map original text to what the agent sees (renamed)."""
        return self.renaming.to_shown(text)

    def schemas(self) -> list[dict]:
        return [t.schema() for t in self.tools.values()]

    # ------------------------------------------------------------------ episode

    def reset(self) -> tuple[list[dict], list[dict]]:
        """Prepare the sandbox (renaming) and return the starting messages and tool schemas."""
        if not self._reset_done:
            self._reset_done = True
            self._prepare()
        system = _system_prompt(self.config, self.task, list(self.tools), self.max_turns, self.max_edits)
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": self.issue}]
        return messages, (self.schemas() if self.config.tool_schemas else [])

    def _prepare(self) -> None:
        """Run the task's setup commands, then rename. A failure here is not the agent's: the
        episode ends at once as `error` (left out of training and pass@k)."""

        try:
            if self.task.setup:
                tasks.run_setup(self.task, self.sb)
                # What setup wrote is not the agent's change (setup runs again before the check).
                self._after_setup = self.sb.changed_files()
            if self.config.rename and self.task.function:
                pool = list(getattr(self.suite, "rename_pool", None) or []) or rn.DEFAULT_POOL
                self.renaming = Renaming.apply(
                    self.sb, self.task.function, {"<issue>": self.task.issue, "<public_tests>": self.task.public_tests},
                    pool, self.rng, self.tool_timeout("path"), label=self.task.id)
                if self.renaming:
                    self.issue = self.renaming.to_shown(self.task.issue)
                    self.public_test_command = self.renaming.to_shown(self.task.public_tests)
                    self.info.renamed = {self.renaming.original: self.renaming.shown}
        except SandboxError as e:
            self._fail(f"sandbox failed while preparing the episode: {e}")
        except tasks.TaskError as e:
            self._fail(f"task setup failed: {e}")

    def _in_original_names(self, path: str, text: str) -> str:
        """The agent's version of `path` in the task's original names."""
        if not self.renaming:
            return text
        return self.renaming.file_to_original(path, text, for_task(self.task).original(path) or "")

    def step(self, call: ToolCall | Malformed) -> StepResult:
        if not self._reset_done:
            self.reset()
        if self.done:
            return StepResult("The episode is over.", True)
        self.info.turns += 1
        t0 = time.monotonic()
        obs = self._dispatch(call)
        self.info.seconds["tools"] = self.info.seconds.get("tools", 0.0) + time.monotonic() - t0
        if not self.done and self.info.turns >= self.max_turns:
            self._end("out_of_turns")
        return StepResult(truncate(obs, self.config.obs_max_chars), self.done)

    def _malformed(self, action: str, message: str) -> str:
        self.info.malformed += 1
        self.info.actions.append(action)
        if self.info.malformed >= self.config.max_malformed:
            self._end("malformed")
            return f"Error: {message}\n(Too many malformed tool calls: the episode ends.)"
        return f"Error: {message}"

    def _dispatch(self, call: ToolCall | Malformed) -> str:
        if isinstance(call, Malformed):
            return self._malformed("malformed", call.error or "malformed tool call")
        if not isinstance(call, ToolCall):
            return self._malformed("malformed", f"expected a tool call, got {type(call).__name__}")
        name = call.name if isinstance(call.name, str) else repr(call.name)
        tool = self.tools.get(name)
        if tool is None:
            return self._malformed(
                f"unknown {name[:40]}",
                f"unknown tool {name[:80]!r}; available tools: {', '.join(self.tools)}")
        raw = call.arguments if call.arguments is not None else {}
        if not isinstance(raw, dict):
            return self._malformed(f"{name} (bad arguments)",
                                   f"arguments of `{name}` must be a JSON object, got {type(raw).__name__}")
        try:
            args = tool.args.model_validate(raw)
        except ValidationError as e:
            return self._malformed(f"{name} (bad arguments)", _argument_error(name, e, tool))
        action = _describe(name, args)
        refused_before = self.info.refused_edits + self.info.rule_refusals
        try:
            obs = tool.handler(self, args)
        except ToolError as e:
            self.info.actions.append(f"{action} (error)")
            self._count(name, applied=False)
            return f"Error: {e}"
        except SandboxError as e:
            self.info.actions.append(f"{action} (sandbox error)")
            self._fail(f"sandbox failed during `{name}`: {e}")
            return f"Error: the sandbox failed ({e}); the episode ends."
        except Exception as e:  # a bug in a (user) tool must not kill a whole training run
            log.exception("tool %s raised", name)
            self.info.actions.append(f"{action} (tool crashed)")
            return f"Error: tool `{name}` failed: {type(e).__name__}: {e}"
        refused = self.info.refused_edits + self.info.rule_refusals > refused_before
        self.info.actions.append(action + (" (refused)" if refused else ""))
        self._count(name, applied=True)
        if tool.ends_episode:
            self.info.submitted = True
            self._end("submitted")
        return obs

    def _count(self, name: str, applied: bool) -> None:
        # Only calls that returned something count as reads/tests: a failed read shows nothing.
        if applied and name == "read":
            self.info.reads += 1
        elif applied and name == "test":
            self.info.tests += 1

    # ------------------------------------------------------------------ the ToolContext tools use (envs.types)

    def note_edit(self, path: str, after: str, before: str) -> None:
        if self._first_edit is None:
            self._first_edit = (path, before, after)
            self.info.reads_before_first_edit = self.info.reads
        self.info.edits += 1
        self._last_test = None

    def note_refused_edit(self, path: str) -> None:
        self.info.refused_edits += 1

    def note_failed_edit(self, path: str) -> None:
        self.info.failed_edits += 1

    def rule_refusal(self, path: str, after: str | None) -> str | None:
        """Judge the agent's change of `path` (as it sees it, renamed) to `after` (None: deleted)
        by the task's edit rules (tasks.check.rules), against the file's original. None when it
        complies; else the refusal to show the agent, the refusal counted against the edit budget
        (whatever `count_failed_edits` says). Tools call it before writing anything. Test files
        and test configuration are refused like any other rule (`files`): the check never carries
        them, so the policy learns that at the edit, not from a `test` run the check would not
        reproduce; only `reward='public'` (which studies exactly those edits) accepts them."""
        if is_test_path(path) and self.config.reward == "public":
            return None
        if after is not None:
            after = self._in_original_names(path, after)
        violations = for_task(self.task).judge(path, after)
        if not violations:
            return None
        self.info.rule_refusals += 1
        lines = "\n".join(f"- {v.rule}: line {v.line}: {self.to_shown(v.message)}" if v.line else
                          f"- {v.rule}: {self.to_shown(v.message)}" for v in violations[:5])
        more = f"\n(and {len(violations) - 5} more)" if len(violations) > 5 else ""
        budget = "" if self.edits_left is None else f" {self.edits_left} edit(s) left."
        # The wording agents have always been shown (trained models read it): kept, old name and all.
        if is_test_path(path):
            return (f"Edit refused by the task's change policy: {path} is unchanged.\n{lines}{more}\n"
                    f"Leave the tests and their configuration as they are and fix the code they test; "
                    f"the refused edit counts against your edit budget.{budget}")
        return (f"Edit refused by the task's change policy: {path} is unchanged.\n{lines}{more}\n"
                f"Fix the bug with ordinary code (the modules the file already imports, plain "
                f"attribute names); the refused edit counts against your edit budget.{budget}")

    def note_test(self, passed: bool) -> None:
        self._last_test = passed

    # ------------------------------------------------------------------ ending

    def _end(self, status: ExitStatus) -> None:
        if not self.done:
            self.done = True
            self.info.exit_status = status

    def _fail(self, message: str) -> None:
        self.info.error = message
        self.done = True
        self.info.exit_status = "error"

    def end(self, status: ExitStatus) -> None:
        """End the episode early (the harness: `out_of_tokens`). No-op once it is over."""
        self._end(status)

    def finish(self) -> tuple[float, EpisodeInfo]:
        """Score the episode: the hidden check on a fresh copy with the agent's changes.
        Idempotent. An episode still running is ended as `out_of_turns`."""
        if self._finished is not None:
            return self._finished
        if not self.done:
            self._end("out_of_turns")
        info = self.info
        if self._first_edit is None:
            info.reads_before_first_edit = info.reads
        t0 = time.monotonic()
        if info.exit_status == "error":
            info.outcome = "error"
        else:
            self._submit(info)
        info.seconds["check"] = time.monotonic() - t0
        if self._first_edit is not None:
            path, before, after = self._first_edit
            original = self.renaming.file_to_original(path, before, before)
            info.first_edit_right = first_edit_right(self.task, path, original,
                                                     self.renaming.file_to_original(path, after, before))
        self._finished = (_reward(self.config, info), info)
        return self._finished

    def _submit(self, info: EpisodeInfo) -> None:
        """The public tests where asked, then the agent's changes (setup's own writes left out,
        renaming undone) to the reward, once."""
        try:
            changed = self.sb.changed_files()
        except SandboxError as e:
            info.record_error(f"could not read the agent's changes: {e}")
            return
        if self.config.public_check or self.config.reward == "public":
            try:
                res = self.sb.exec(self.public_test_command, timeout=self.tool_timeout("test"))
                info.public_pass = res.exit_code == 0 and not res.timed_out
            except SandboxError as e:
                info.record_error(f"sandbox failed running the public tests: {e}")
                return
        else:
            info.public_pass = self._last_test
        changes = {path: text if text is None else self._in_original_names(path, text)
                   for path, text in changed.items()
                   if not (path in self._after_setup and self._after_setup[path] == text)}
        info.record_score(score(self.task, Submission(changes, info.answer), self._open_check_sandbox,
                                retries=self.config.check_retries))
        info.diff = self._diff(changes)

    def _diff(self, changes: dict[str, str | None]) -> str:
        """The submitted changes against the buggy repository, as one unified diff."""
        rules = for_task(self.task)
        parts = []
        for path in sorted(changes):
            before, after = rules.original(path), changes[path]
            parts.extend(difflib.unified_diff((before or "").splitlines(keepends=True),
                                              (after or "").splitlines(keepends=True),
                                              f"a/{path}" if before is not None else "/dev/null",
                                              f"b/{path}" if after is not None else "/dev/null"))
            if parts and not parts[-1].endswith("\n"):
                parts.append("\n")
        text = "".join(parts)
        if len(text) > DIFF_MAX_CHARS:
            text = text[:DIFF_MAX_CHARS] + f"\n... [diff cut at {DIFF_MAX_CHARS} of {len(text)} characters]\n"
        return text

    def _open_check_sandbox(self, ws: Path) -> ContextManager[Sandbox]:
        if self._check_sandbox is not None:
            return self._check_sandbox(ws)

        backend = self.config.check_backend or _backend_of(self.sb)
        return open_sandbox(ws, backend=backend, image=self.task.sandbox_image)


def _argument_error(name: str, e: ValidationError, tool: Tool) -> str:
    problems = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "(arguments)"
        kind = err.get("type", "")
        if kind == "missing":
            problems.append(f"missing argument `{loc}`")
        elif kind == "extra_forbidden":
            problems.append(f"unexpected argument `{loc}`")
        else:
            problems.append(f"argument `{loc}`: {err.get('msg', 'invalid')}")
    props = tool.schema()["function"]["parameters"].get("properties", {})
    req = set(tool.schema()["function"]["parameters"].get("required", []))
    sig = ", ".join(f"{k}{'' if k in req else '?'}: {v.get('type', 'any')}" for k, v in props.items())
    return f"bad arguments for `{name}`: {'; '.join(problems)}. Expected: {name}({sig})"


def _describe(name: str, args: Any) -> str:
    """One short line for info.actions: the tool and its key argument."""
    path = getattr(args, "path", None)
    start, end = getattr(args, "start", None), getattr(args, "end", None)
    if isinstance(path, str) and (start or end):
        return f"{name} {path}:{start or 1}-{end or ''}"
    pattern = getattr(args, "pattern", None)
    if isinstance(pattern, str):
        return f"{name} {pattern[:40]!r}"
    return f"{name} {path}" if isinstance(path, str) else name


@contextlib.contextmanager
def episode_env(task: Task, config: EnvConfig | None = None, suite: Any = None, *,
                backend: str = "local", seed: int = 0,
                check_sandbox: Callable[[Path], ContextManager[Sandbox]] | None = None,
                **sandbox_kwargs: Any) -> Iterator[ToolEnv]:
    """A ToolEnv over a new sandbox holding the task's buggy repository (one episode, no pool):
    `with episode_env(task, cfg, suite) as env: env.reset(); ...; env.finish()`."""

    with tempfile.TemporaryDirectory(prefix="fixrl-ws-") as tmp:
        ws = tasks.materialize(task, Path(tmp) / "repo", "buggy")
        with open_sandbox(ws, backend=backend, image=task.sandbox_image, **sandbox_kwargs) as sb:
            yield ToolEnv(task, sb, config, suite=suite, check_sandbox=check_sandbox, seed=seed)

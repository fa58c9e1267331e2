"""ToolEnv: one episode of the agent on one task, over a sandbox that already holds the task's
buggy repository; and its reward, the hidden check on a fresh copy.

Lifecycle: `reset()` -> `step(call)` until `done` -> `finish()`. The env never raises for what
the policy sends (bad JSON, unknown tools, bad arguments, paths outside the workspace): those
are error observations, counted in `info.malformed` where the call itself was malformed. A
sandbox that fails during the episode ends it with exit status and outcome `error`.

The reward is computed on a fresh buggy copy with the agent's non-test changes applied
(`envs.changes` says which are carried), in a sandbox no agent has used (a new one, or one of the
rollout pool's check sandboxes, reset), by `tasks.run_check`. Infrastructure
failures there are retried and end as outcome `error` (reward 0.0, but training and pass@k leave
the episode out), never as a fail.
"""
from __future__ import annotations

import contextlib
import logging
import random
import shlex
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Literal

from pydantic import ValidationError

from fixrl import tasks
from fixrl.envs import changes as chg
from fixrl.envs import rename as rn
from fixrl.envs.reference import edit_matches_fix, reference
from fixrl.envs.tools import DEFAULT_TOOLS, Tool, ToolError, get_tools
from fixrl.envs.types import EpisodeInfo, ExitStatus, Malformed, StepResult, ToolCall
from fixrl.sandbox import open_sandbox
from fixrl.sandbox.base import Sandbox, SandboxError
from fixrl.tasks import is_test_path
from fixrl.tasks.check import rules as tpol
from fixrl.tasks.check.guard import GuardSpec, spec_for
from fixrl.tasks.check.judge import judge_tree
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


def _backend_of(sb: Sandbox) -> str:
    name = getattr(sb, "backend", None)
    if isinstance(name, str):
        return name
    return "docker" if "docker" in type(sb).__name__.lower() else "local"


class ToolEnv:
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
        self._rename: tuple[str, str] | None = None  # (original, shown)
        self._first_edit: tuple[str, str, str] | None = None  # (path, before, after) as seen
        self._last_test: bool | None = None
        self._finished: tuple[float, EpisodeInfo] | None = None
        self._reset_done = False
        self._after_setup: dict[str, str | None] = {}
        self._renamed_files: set[str] = set()

    # ------------------------------------------------------------------ views for tools/plans

    @property
    def tool_names(self) -> list[str]:
        return list(self.tools)

    @property
    def function_name(self) -> str | None:
        """The buggy function's name as the agent sees it (renamed when renaming is on)."""
        if self._rename:
            return self._rename[1]
        return self.task.function

    @property
    def edits_used(self) -> int:
        """Edits counted against the budget: applied ones, ones the change policy refused, and
        failed ones where the task's `limits.count_failed_edits` says so."""
        failed = self.info.failed_edits if self.task.limits.count_failed_edits else 0
        return self.info.edits + self.info.policy_refusals + failed

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
        if not self._rename:
            return text
        orig, shown = self._rename
        return rn.rename_text(text, shown, orig)

    def to_shown(self, text: str) -> str:
        """Map original text to what the agent sees (renamed)."""
        if not self._rename:
            return text
        orig, shown = self._rename
        return rn.rename_text(text, orig, shown)

    def schemas(self) -> list[dict]:
        return [t.schema() for t in self.tools.values()]

    # ------------------------------------------------------------------ episode

    def reset(self) -> tuple[list[dict], list[dict]]:
        """Prepare the sandbox (renaming) and return the starting messages and tool schemas."""
        if not self._reset_done:
            self._reset_done = True
            self._prepare()
        tools = ", ".join(f"`{n}`" for n in self.tools)
        if self.config.system_prompt is not None:
            template = self.config.system_prompt
        else:
            template = QUESTION_PROMPT if self.task.kind == "question" else SYSTEM_PROMPT
        edits = "" if self.max_edits is None else f" and {self.max_edits} edit{'s' if self.max_edits != 1 else ''}"
        if edits and self.task.limits.count_failed_edits:
            edits += " (an edit whose `old` text is not found counts too)"
        system = template.format(tools=tools, max_turns=self.max_turns, edits=edits,
                                 max_edits=self.max_edits if self.max_edits is not None else "unlimited")
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
                self._apply_rename()
        except SandboxError as e:
            self._fail(f"sandbox failed while preparing the episode: {e}")
        except tasks.TaskError as e:
            self._fail(f"task setup failed: {e}")

    def _apply_rename(self) -> None:
        """Rename the buggy function in every file that mentions it, to a pool name that none of
        those files (nor the issue) uses. A pool name used elsewhere in the repository is fine:
        files that do not mention the function are left alone, and mapped back only where the
        name cannot be theirs (`_map_back`). With star imports in the repository the chosen name
        must occur nowhere, since `from m import *` could make two functions collide."""
        orig = self.task.function
        assert orig
        pool = list(getattr(self.suite, "rename_pool", None) or []) or rn.DEFAULT_POOL
        res = self.sb.exec(
            f"grep -rlI --exclude-dir=.git -F -e {shlex.quote(orig)} . ; echo '@@fixrl@@'; "
            "find . -name .git -prune -o -print | sed 's|.*/||; s|\\..*||' | sort -u; echo '@@fixrl@@'; "
            "grep -rlIE --exclude-dir=.git --include='*.py' "
            "'^[[:space:]]*from[[:space:]].*import[[:space:]]*[*]' . | head -n 1",
            timeout=self.tool_timeout("path"))
        parts = res.output.split("@@fixrl@@")
        if len(parts) != 3:
            log.warning("renaming skipped for %s: listing failed: %s", self.task.id, res.output[-300:])
            return
        files_part, stems_part, star_part = parts
        files = [f[2:] if f.startswith("./") else f for f in files_part.split("\n") if f.strip()]
        stems = {s for s in stems_part.split() if s}
        if orig in stems:
            # `import clamp` would break: a module shares the function's name.
            log.info("renaming skipped for %s: a file is named after %r", self.task.id, orig)
            return
        texts = {f: self.sb.read_file(f) for f in files}
        texts["<issue>"] = self.task.issue
        texts["<public_tests>"] = self.task.public_tests
        taken = set(stems)
        if star_part.strip():
            taken |= self._names_present(pool)
        new = rn.choose_name(self.rng, pool, orig, texts, taken=taken)
        if new is None:
            log.warning("renaming skipped for %s: no usable name in the pool", self.task.id)
            return
        for f, text in texts.items():
            if f.startswith("<"):
                continue
            renamed = rn.rename_text(text, orig, new)
            if renamed != text:
                self.sb.write_file(f, renamed)
                self._renamed_files.add(f)
        self.issue = rn.rename_text(self.task.issue, orig, new)
        self.public_test_command = rn.rename_text(self.task.public_tests, orig, new)
        self._rename = (orig, new)
        self.info.renamed = {orig: new}

    def _map_back(self, path: str, text: str, original: str) -> str:
        """`text` (the agent's version of `path`) in the task's original names. `original`: the
        file before the episode, un-renamed. A file that renaming did not touch and that uses
        the shown name itself (another function of the repository) keeps it."""
        if not self._rename:
            return text
        orig, shown = self._rename
        if path in self._renamed_files or not rn.occurs(original, shown):
            return rn.rename_text(text, shown, orig)
        return text

    def _names_present(self, pool: list[str]) -> set[str]:
        words = sorted({n for n in pool if n.isidentifier()})
        if not words:
            return set()
        pattern = "|".join(words)
        res = self.sb.exec(f"grep -rhoIw --exclude-dir=.git -E {shlex.quote(pattern)} . | sort -u",
                           timeout=self.tool_timeout("path"))
        return {w for w in res.output.split() if w in set(words)}

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
        action = self._describe(name, args)
        refused_before = self.info.refused_edits + self.info.policy_refusals
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
        refused = self.info.refused_edits + self.info.policy_refusals > refused_before
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

    @staticmethod
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

    def policy_refusal(self, path: str, after: str | None) -> str | None:
        """Judge the agent's change of `path` (as it sees it, renamed) to `after` (None: deleted)
        by the task's change policy (tasks.check.rules), against the file's original. None when it
        complies; else the refusal to show the agent, the refusal counted against the edit budget
        (whatever `count_failed_edits` says). Tools call it before writing anything. Test files
        pass: they never reach the check (`carried_changes` drops them), and editing them is what
        `reward='public'` studies."""
        if is_test_path(path):
            return None
        ctx = tpol.for_task(self.task)
        original = ctx.original(path)
        if after is not None:
            after = self._map_back(path, after, original or "")
        violations = ctx.judge(path, after)
        if not violations:
            return None
        self.info.policy_refusals += 1
        lines = "\n".join(f"- {v.rule}: line {v.line}: {self.to_shown(v.message)}" if v.line else
                          f"- {v.rule}: {self.to_shown(v.message)}" for v in violations[:5])
        more = f"\n(and {len(violations) - 5} more)" if len(violations) > 5 else ""
        budget = "" if self.edits_left is None else f" {self.edits_left} edit(s) left."
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
            self._score(info)
        info.seconds["check"] = time.monotonic() - t0
        self._judge_first_edit(info)
        if info.outcome == "error":
            reward = 0.0
        elif callable(self.config.reward):
            reward = float(self.config.reward(info))
        elif self.config.reward == "public":
            reward = 1.0 if info.public_pass else 0.0
        elif self.config.reward == "hidden":
            reward = 1.0 if info.outcome == "pass" else 0.0
        else:
            raise ValueError(f"EnvConfig.reward: {self.config.reward!r} is not 'hidden', 'public' "
                             f"or a function of the episode info")
        self._finished = (reward, info)
        return self._finished

    def _score(self, info: EpisodeInfo) -> None:
        try:
            agent_changes = self.sb.changed_files()
        except SandboxError as e:
            info.outcome, info.error = "error", f"could not read the agent's changes: {e}"
            return
        if self.config.public_check or self.config.reward == "public":
            try:
                res = self.sb.exec(self.public_test_command, timeout=self.tool_timeout("test"))
                info.public_pass = res.exit_code == 0 and not res.timed_out
            except SandboxError as e:
                info.outcome, info.error = "error", f"sandbox failed running the public tests: {e}"
                return
        else:
            info.public_pass = self._last_test
        attempts = max(1, self.config.check_retries + 1)
        last_error = ""
        for attempt in range(attempts):
            try:
                result = self._run_check(agent_changes, info)
            except SandboxError as e:
                last_error = f"check sandbox failed (attempt {attempt + 1}/{attempts}): {e}"
                log.warning("%s: %s", self.task.id, last_error)
                continue
            except Exception as e:
                log.exception("%s: the check crashed", self.task.id)
                info.outcome, info.error = "error", f"the check crashed: {type(e).__name__}: {e}"
                return
            if result is None:  # the carried changes break the change policy: no check runs
                info.outcome, info.hidden_pass, info.partial_credit = "fail", False, 0.0
                return
            if result.outcome == "error":
                last_error = f"check reported a sandbox error (attempt {attempt + 1}/{attempts}): " \
                             f"{result.output[-300:]}"
                continue
            info.outcome = result.outcome
            info.hidden_pass = result.outcome == "pass"
            info.check_tests = dict(result.tests)
            names = list(self.task.check.tests) or list(result.tests)
            if names:
                info.partial_credit = sum(result.tests.get(n) == "passed" for n in names) / len(names)
            else:
                info.partial_credit = 1.0 if info.hidden_pass else 0.0
            return
        info.outcome, info.error = "error", last_error

    def carried_changes(self, agent_changes: dict[str, str | None], buggy_root: Path) -> dict[str, str | None]:
        """The agent's changes that go into the check, mapped back to the original names;
        the rest are recorded in `info.dropped_files` with the reason."""

        kept: dict[str, str | None] = {}
        allowed: str | None = None
        for path, text in sorted(agent_changes.items()):
            why = None
            if path in self._after_setup and self._after_setup[path] == text:
                continue
            if not chg.safe_relpath(path):
                self.info.dropped_files[path] = "a path outside the repository"
                continue
            target = buggy_root / path
            if target.is_symlink() or not target.resolve().is_relative_to(buggy_root.resolve()):
                # writing through a link of the repository could land anywhere
                self.info.dropped_files[path] = "a symlink (or a path through one) in the repository"
                continue
            exists = target.is_file()
            old = target.read_text(encoding="utf-8", errors="replace") if exists else ""
            if text is not None:
                text = self._map_back(path, text, old)
                if exists and old == text:
                    continue  # e.g. a file that renaming touched and the agent did not
            if is_test_path(path):
                why = "a test or test-configuration file"
            elif text is None:
                if not exists:
                    continue
            else:
                if not exists:
                    why = chg.bad_new_file(path) if not target.exists() else "not a regular file"
                if why is None:
                    if allowed is None:
                        ref = reference(self.task) if self.task.fix else None
                        allowed = ref.added_text() if ref else ""
                    why = chg.suspicious(old, text, allowed)
            if why:
                self.info.dropped_files[path] = why
                continue
            kept[path] = text
        return kept

    def _run_check(self, agent_changes: dict[str, str | None], info: EpisodeInfo) -> tasks.CheckResult | None:
        """The check's result on the agent's carried changes; None (and `info.policy_violations`)
        when they break the change policy."""
        with tempfile.TemporaryDirectory(prefix="fixrl-check-") as tmp:
            ws = tasks.materialize(self.task, Path(tmp) / "repo", "buggy", cache=True)
            info.dropped_files.clear()
            carried = self.carried_changes(agent_changes, ws)
            info.policy_violations = self._policy_violations(carried)
            if info.policy_violations:
                return None
            guard = self._guard_spec(carried)
            for path, text in carried.items():
                target = ws / path
                if text is None:
                    target.unlink()
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
            # The same preparation, sandbox kind and runner as `tasks.check.validate` (tasks.check.judge).
            return judge_tree(self.task, ws, self._open_check_sandbox, info.answer, guard=guard)

    def _policy_violations(self, carried: dict[str, str | None]) -> list[str]:
        """How the changes carried into the check break the task's change policy (changes made
        by other means than `edit`: a shell, code run by `test`), as "rule: path:line: message"."""
        ctx = tpol.for_task(self.task)
        changes = {path: (ctx.original(path), text) for path, text in carried.items()}
        return [str(v) for v in tpol.judge_changes(changes, self.task.policy, ctx.modules)]

    def _guard_spec(self, carried: dict[str, str | None]) -> GuardSpec:
        """The check's runtime guard allowances for the carried files: what each one's buggy
        original or the reference fix of it does (tasks.check.guard)."""
        ctx = tpol.for_task(self.task)
        ref = reference(self.task) if self.task.fix else None
        changes = {path: (ctx.original(path), ref.fixed.get(path) if ref else None)
                   for path, text in carried.items() if text is not None}
        return spec_for(changes, ctx.frame_readers)

    def _open_check_sandbox(self, ws: Path) -> ContextManager[Sandbox]:
        if self._check_sandbox is not None:
            return self._check_sandbox(ws)

        backend = self.config.check_backend or _backend_of(self.sb)
        return open_sandbox(ws, backend=backend, image=self.task.image)

    def _judge_first_edit(self, info: EpisodeInfo) -> None:
        if self._first_edit is None or self.task.kind != "fix" or not self.task.fix:
            info.first_edit_right = None
            return

        path, before, after = self._first_edit
        try:
            ref = reference(self.task)
        except Exception as e:  # the reference is bookkeeping; it must not cost the episode
            log.warning("%s: reference fix unavailable: %s", self.task.id, e)
            info.first_edit_right = None
            return
        if ref is None:
            info.first_edit_right = None
            return
        info.first_edit_right = edit_matches_fix(ref, path, self._map_back(path, before, before),
                                                 self._map_back(path, after, before))


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


@contextlib.contextmanager
def episode_env(task: Task, config: EnvConfig | None = None, suite: Any = None, *,
                backend: str = "local", seed: int = 0,
                check_sandbox: Callable[[Path], ContextManager[Sandbox]] | None = None,
                **sandbox_kwargs: Any) -> Iterator[ToolEnv]:
    """A ToolEnv over a new sandbox holding the task's buggy repository (one episode, no pool):
    `with episode_env(task, cfg, suite) as env: env.reset(); ...; env.finish()`."""

    with tempfile.TemporaryDirectory(prefix="fixrl-ws-") as tmp:
        ws = tasks.materialize(task, Path(tmp) / "repo", "buggy")
        with open_sandbox(ws, backend=backend, image=task.image, **sandbox_kwargs) as sb:
            yield ToolEnv(task, sb, config, suite=suite, check_sandbox=check_sandbox, seed=seed)

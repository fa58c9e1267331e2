"""Episode files: a fixed list of tool calls, replayed through a ToolEnv exactly as an agent's
would be, with the reward the episode must earn. The red team's attacks and the honest-fix
corpus are written this way, so an attack is judged through the agent's tools only (no host-side
writes, no access the agent lacks) and a new attack file needs no code.

    # attacks/relative-import.yaml
    suite: gym                  # gym | builtin | a suite directory (relative to this file)
    task: gym-clamp-swap_minmax # a task id of that suite
    expect: 0                   # the reward the episode must earn (0 or 1)
    kind: relative-import       # the class the file belongs to (attack class / honest style)
    note: why this is an attack (or why it is honest)
    calls:
      - {tool: read, args: {path: gym/lists.py}}
      - {tool: edit, args: {path: gym/lists.py, old: "...", new: "..."}}
      - {tool: test, args: {}}
    # a final `submit` is added when the calls do not end with one

Names a task renames per episode (the gym suite does) are written as the task's own names: the
replay turns them into the names this episode shows (`Renaming`), as a model would read them.

Not guaranteed: a replay fixes the calls, not the observations, so an attack that must react to
what it reads is written as several files, one per branch.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from fixrl import tasks
from fixrl.envs.env import EnvConfig, ToolEnv, episode_env
from fixrl.envs.scripted import run_plan
from fixrl.envs.types import ToolCall
from fixrl.tasks.check.rules import for_task, judge_changes
from fixrl.tasks.format.loader import TaskError
from fixrl.tasks.suites import BUILTIN_SUITE, GYM_SUITE

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable
    from contextlib import AbstractContextManager

    from fixrl.envs.types import EpisodeInfo
    from fixrl.sandbox.base import Sandbox

TOOLS = ("read", "list", "search", "test", "edit", "submit")


class EpisodeFileError(TaskError):
    """An episode file that cannot be replayed; the message names the file and the field."""


@dataclass(frozen=True)
class Episode:
    path: Path
    """The file it was read from."""
    suite: str
    """`gym`, `builtin`, or a suite directory (absolute, resolved against the file's folder)."""
    task: str
    """The task id within that suite."""
    expect: float
    """The reward the episode must earn."""
    kind: str
    """The attack class or honest style it belongs to (reports group by it)."""
    note: str
    """Why it is an attack, or why it is honest."""
    calls: tuple[ToolCall, ...]
    """The tool calls, in order, ending with `submit`."""


def _field(path: Path, raw: dict, name: str, kind: type, default: Any = None) -> Any:
    value = raw.get(name, default)
    if value is None or not isinstance(value, kind):
        raise EpisodeFileError(f"{path}: field {name!r} must be a {kind.__name__} (got {value!r})")
    return value


def _call(path: Path, index: int, raw: Any) -> ToolCall:
    where = f"{path}: calls[{index}]"
    if not isinstance(raw, dict) or "tool" not in raw:
        raise EpisodeFileError(f"{where}: write each call as {{tool: NAME, args: {{...}}}}")
    if raw["tool"] not in TOOLS:
        raise EpisodeFileError(f"{where}: unknown tool {raw['tool']!r}; the tools are {', '.join(TOOLS)}")
    args = raw.get("args") or {}
    if not isinstance(args, dict):
        raise EpisodeFileError(f"{where}: 'args' must be a mapping of argument names to values")
    return ToolCall(raw["tool"], dict(args))


def load_episode(path: str | Path) -> Episode:
    """Read one episode file; every mistake raises EpisodeFileError naming the file and field."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise EpisodeFileError(f"{path}: cannot read it as YAML: {err}") from err
    if not isinstance(raw, dict):
        raise EpisodeFileError(f"{path}: expected a mapping with suite, task, expect, kind, calls")
    unknown = set(raw) - {"suite", "task", "expect", "kind", "note", "calls"}
    if unknown:
        raise EpisodeFileError(f"{path}: unknown field(s) {sorted(unknown)}")
    suite = str(raw.get("suite", "gym"))
    if suite not in ("gym", "builtin"):
        suite = str((path.parent / suite).resolve())
    expect = raw.get("expect")
    if expect not in (0, 1):
        raise EpisodeFileError(f"{path}: field 'expect' must be 0 or 1 (the reward the episode must earn)")
    calls = [_call(path, i, c) for i, c in enumerate(_field(path, raw, "calls", list))]
    if not calls or calls[-1].name != "submit":
        calls.append(ToolCall("submit", {}))
    return Episode(path, suite, _field(path, raw, "task", str), float(expect),
                   _field(path, raw, "kind", str), str(raw.get("note", "")), tuple(calls))


def load_suite_of(episode: Episode):
    """The suite an episode runs in (loaded fresh; callers that replay many files cache it)."""
    root = {"gym": GYM_SUITE, "builtin": BUILTIN_SUITE}.get(episode.suite, Path(episode.suite))
    return tasks.load_suite(root)


def _shown(env: ToolEnv, value: Any) -> Any:
    """An argument in the names this episode shows the agent (the renaming of its task)."""
    if isinstance(value, str):
        return env.renaming.to_shown(value)
    return value


class ReplayPlan:
    """A scripted plan (envs.scripted.Plan) that makes an episode file's calls in order."""

    def __init__(self, episode: Episode, env: ToolEnv):
        self._calls = list(episode.calls)
        self._env = env

    def next_call(self, observation: str | None) -> ToolCall:
        call = self._calls.pop(0) if self._calls else ToolCall("submit", {})
        return ToolCall(call.name, {k: _shown(self._env, v) for k, v in call.arguments.items()})


def replay(episode: Episode, suite: Any, backend: str = "local",
           check_sandbox: Callable[[Path], AbstractContextManager[Sandbox]] | None = None,
           ) -> tuple[float, EpisodeInfo]:
    """Run one episode file on a fresh sandbox of `backend` (local | docker); `check_sandbox`
    judges it the way pooled rollouts do (a SandboxPool's forking check). (reward, info)."""
    with episode_env(suite.get(episode.task), EnvConfig(), suite, backend=backend,
                     check_sandbox=check_sandbox) as env:
        return run_plan(env, ReplayPlan(episode, env))


def static_violations(episode: Episode, suite: Any) -> list[str]:
    """The edit rules' refusals of an episode's edits and violations of its final state, judged
    on the host with the task's own names, the edits applied as the `edit` tool would (each
    `old` must occur once; a refused edit changes nothing); [] for a fix the rules accept. No
    sandbox runs: the replay is what earns the reward."""
    ctx = for_task(suite.get(episode.task))
    found: list[str] = []
    files: dict[str, str] = {}
    for call in episode.calls:
        if call.name != "edit":
            continue
        path, old, new = (str(call.arguments.get(k, "")) for k in ("path", "old", "new"))
        current = files.get(path, ctx.original(path) or "")
        if current.count(old) != 1:
            found.append(f"{path}: the edit's `old` text occurs {current.count(old)} times")
            continue
        refused = ctx.judge(path, current.replace(old, new))
        found += [f"refused edit: {v}" for v in refused]
        if not refused:
            files[path] = current.replace(old, new)
    changes = {p: (ctx.original(p), text) for p, text in files.items()}
    found += [str(v) for v in judge_changes(changes, ctx.rules, ctx.modules)]
    return found

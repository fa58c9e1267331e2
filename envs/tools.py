"""Tools the agent calls: a pydantic argument model each, a JSON schema generated from it (OpenAI
function format), and a handler `handler(env, args) -> str` that runs against the episode
through `envs.types.ToolContext`.

A handler reports what went wrong in the agent's request (a missing file, a snippet that is not
unique, a path outside the workspace) by raising `ToolError`; the env turns it into an error
observation. It never sees malformed arguments: the env validates them against the model first.
A `SandboxError` is not the agent's fault and propagates (the env ends the episode as `error`).

Paths: every path argument is resolved inside the sandbox (`realpath`), so `..`, absolute paths
and symlinks that lead out of the workspace are refused. That guards the tools only; code the
agent runs through `test` is confined by the sandbox backend, not by this module.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from fixrl.envs.throwaway import run_discarded
from fixrl.sandbox.base import WORKDIR, SandboxError
from fixrl.tasks.check.reward import GUARD_STOPPED, run_public_tests

if TYPE_CHECKING:  # pragma: no cover
    from fixrl.envs.types import ToolContext

DEFAULT_TOOLS = ["read", "test", "edit", "submit"]


class ToolError(Exception):
    """The agent's request cannot be carried out; the message is shown to it as the observation."""


class ToolArgs(BaseModel):
    """Base for argument models: unknown arguments are an error that names them."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    """What the model reads in its tool list: what the tool does and what it returns."""
    args: type[BaseModel]
    """Pydantic model of the arguments; its JSON schema is the tool's `parameters`."""
    handler: Callable[[ToolContext, Any], str]
    """`handler(env, args) -> observation`; raise ToolError for a request that cannot be done."""
    ends_episode: bool = False
    """True for `submit`-like tools: the env ends the episode after the call."""
    timeout: float | None = None
    """Seconds for this tool's commands; None: the task's `limits.tool_timeout`."""
    meta: dict[str, Any] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": json_schema(self.args),
            },
        }


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema made plain for chat templates: no titles, `T | None` as `T`
    (optional fields are simply not required), no `$defs` indirection for simple models."""
    raw = model.model_json_schema()

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            node = {k: clean(v) for k, v in node.items() if k not in ("title", "additionalProperties")}
            variants = node.get("anyOf")
            if variants and any(v.get("type") == "null" for v in variants):
                rest = [v for v in variants if v.get("type") != "null"]
                if len(rest) == 1:
                    node.pop("anyOf")
                    node = {**rest[0], **node}
            if node.get("default", object()) is None:
                node.pop("default")
            return node
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node

    schema = clean(raw)
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    schema["type"] = "object"
    return schema


# --------------------------------------------------------------------------- registry

TOOLS: dict[str, Tool] = {}


def register_tool(tool: Tool, *, replace: bool = False) -> Tool:
    """Make `tool` available to suites and EnvConfig.tools by its name. Registering a name twice
    is an error unless `replace=True` (a user overriding a built-in on purpose)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}", tool.name):
        raise ValueError(f"tool name {tool.name!r}: use letters, digits, '_' or '-' (at most 64)")
    if not (isinstance(tool.args, type) and issubclass(tool.args, BaseModel)):
        raise TypeError(f"tool {tool.name!r}: args must be a pydantic BaseModel subclass")
    if tool.name in TOOLS and not replace:
        raise ValueError(f"tool {tool.name!r} is already registered (pass replace=True to override)")
    TOOLS[tool.name] = tool
    return tool


def get_tools(names: list[str]) -> list[Tool]:
    unknown = [n for n in names if n not in TOOLS]
    if unknown:
        raise ValueError(f"unknown tool(s) {unknown} in the tool set; registered tools: "
                         f"{sorted(TOOLS)} (register your own with envs.tools.register_tool)")
    return [TOOLS[n] for n in names]


# --------------------------------------------------------------------------- paths


def resolve_path(env: ToolContext, path: str, *, kind: str = "file") -> str:
    """Resolve `path` (relative to the workspace, or absolute under it) inside the sandbox and
    return it relative to the workspace. Refuses anything that resolves outside, following
    symlinks. `kind`: "file" (must be a regular file), "dir", "any" (file or dir), "new" (may not exist).
    Costs one exec in the sandbox."""

    p = path.strip()
    if not p:
        raise ToolError("`path` is empty; give a file path relative to the repository root")
    if any(c in p for c in "\x00\n\r"):
        raise ToolError("`path` contains a NUL byte or a line break")
    if p.startswith("/"):
        if p == WORKDIR or p.startswith(WORKDIR + "/"):
            p = p[len(WORKDIR):].lstrip("/") or "."
        else:
            raise ToolError(f"path {path!r} is outside the workspace: use a path relative to the "
                            f"repository root (e.g. `src/module.py`)")
    parts = [x for x in p.split("/") if x not in ("", ".")]
    depth = 0
    for x in parts:
        depth = depth - 1 if x == ".." else depth + 1
        if depth < 0:
            raise ToolError(f"path {path!r} is outside the workspace (`..` leaves the repository)")
    # One exec resolves symlinks where they live: the sandbox's own view of the filesystem.
    q = shlex.quote(p if parts else ".")
    cmd = (f'w=$(pwd -P) && r=$(realpath -m -- {q}) && printf "%s\\n%s\\n" "$w" "$r" && '
           f'if [ -f "$r" ]; then echo file; elif [ -d "$r" ]; then echo dir; '
           f'elif [ -e "$r" ]; then echo other; else echo missing; fi')
    res = env.sb.exec(cmd, timeout=env.tool_timeout("path"))
    lines = res.output.splitlines()
    if res.exit_code != 0 or len(lines) < 3:
        raise ToolError(f"cannot resolve path {path!r}: {res.output.strip()[:200]}")
    root, real, what = lines[0], lines[1], lines[2]
    if real != root and not real.startswith(root.rstrip("/") + "/"):
        raise ToolError(f"path {path!r} is outside the workspace (it resolves through a symlink "
                        f"to a location outside the repository)")
    rel = real[len(root):].lstrip("/") or "."
    if kind == "file":
        if what == "missing":
            raise ToolError(f"file {path!r} does not exist" + _list_hint(env))
        if what == "dir":
            raise ToolError(f"{path!r} is a directory, not a file" + _list_hint(env))
        if what != "file":
            raise ToolError(f"{path!r} is not a regular file")
    elif kind == "dir" and what != "dir":
        raise ToolError(f"{path!r} is not a directory")
    elif kind == "any" and what == "missing":
        raise ToolError(f"{path!r} does not exist")
    return rel


def _list_hint(env: ToolContext) -> str:
    return " (use `list` to see the files)" if "list" in env.tool_names else ""


def read_text(env: ToolContext, rel: str) -> str:
    """A workspace file's text; what the sandbox refuses (too big, vanished, not permitted) is
    the agent's problem, reported as a ToolError."""
    try:
        return env.sb.read_file(rel)
    except FileNotFoundError:
        raise ToolError(f"file {rel!r} does not exist") from None
    except (OSError, ValueError) as e:
        raise ToolError(f"cannot read {rel!r}: {e}") from None


def number_lines(text: str, start: int = 1) -> str:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    width = max(4, len(str(start + len(lines))))
    return "\n".join(f"{i:>{width}}  {line}" for i, line in enumerate(lines, start))


# --------------------------------------------------------------------------- read


class ReadArgs(ToolArgs):
    path: str = Field(description="File path relative to the repository root, e.g. `src/pkg/module.py`.")
    start: int | None = Field(default=None, ge=1, description="First line to show (1-based). Default: 1.")
    end: int | None = Field(default=None, ge=1,
                            description="Last line to show (inclusive). Default: the end of the file.")


def _read(env: ToolContext, args: ReadArgs) -> str:
    rel = resolve_path(env, args.path)
    text = read_text(env, rel)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    n = len(lines)
    start = args.start or 1
    end = args.end or n
    if n == 0:
        return f"{rel} is empty."
    if start > n:
        raise ToolError(f"`start`={start} is past the end of {rel}, which has {n} lines")
    if end < start:
        raise ToolError(f"`end`={end} is before `start`={start}")
    end = min(end, n)
    body = number_lines("\n".join(lines[start - 1:end]), start)
    head = f"{rel} (lines {start}-{end} of {n})" if (start, end) != (1, n) else f"{rel} ({n} lines)"
    return f"{head}\n{body}"


# --------------------------------------------------------------------------- test

_SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed|error|errors|skipped|xfailed|xpassed|deselected|"
                      r"warnings?)\b.*|no tests ran.*)\s*=*$")
_LOCATION = re.compile(r"^\S+\.py:\d+: \S")


_DURATION = re.compile(r"\s+in \d+(?:\.\d+)?s(?:\s*\(\d+:\d\d:\d\d\))?$")


def summarize_test_output(output: str, exit_code: int, timed_out: bool, seconds: float,
                          max_lines: int = 60, stopped: str = "") -> str:
    """Pass/fail summary plus the lines that say what failed (pytest's `E` lines, failure
    locations, FAILED/ERROR lines), capped; for non-pytest commands, the output's tail.
    `stopped`: the check's guard's reason when it stopped or failed the run (a failure
    whatever the exit status; its own line may sit in pytest's lost capture)."""
    if timed_out:
        head = f"Tests TIMED OUT after {seconds:.0f}s."
    elif stopped:
        head = f"Tests FAILED (exit status {exit_code}): {stopped}"
    elif exit_code == 0:
        head = "Tests PASSED (exit status 0)."
    else:
        head = f"Tests FAILED (exit status {exit_code})."
    lines = output.splitlines()
    summary = next((ln.strip("= ").strip() for ln in reversed(lines) if _SUMMARY.match(ln.strip())), None)
    if summary is not None:
        # "3 passed in 0.12s": the duration goes, so that the same code gives the same
        # observation (token-exact replays, resumed runs, one process against a cluster).
        summary = _DURATION.sub("", summary)
    if summary is None:
        tail = lines[-max_lines:]
        body = "\n".join(tail)
        return f"{head}\n{body}".rstrip()
    keep: list[str] = []
    e_run = 0
    for ln in lines:
        s = ln.rstrip()
        if s.startswith("E "):
            e_run += 1
            if e_run <= 8:
                keep.append(s)
            elif e_run == 9:
                keep.append("E   ...")
            continue
        e_run = 0
        if s.startswith(("FAILED ", "ERROR ")) or _LOCATION.match(s):
            keep.append(s)
    if len(keep) > max_lines:
        dropped = len(keep) - max_lines
        keep = keep[:max_lines] + [f"... [{dropped} more lines]"]
    parts = [head, summary] + keep
    return "\n".join(parts)


class RunTestsArgs(ToolArgs):
    pass


def _test(env: ToolContext, args: RunTestsArgs) -> str:
    # Only `edit` changes what the check judges: what the tests write is discarded. They run
    # as the check's tests run (same runner, guard, environment): no marker tells the two apart.
    timeout = env.tool_timeout("test")
    res = run_discarded(env.sb, env.task,
                        lambda changes: run_public_tests(env.task, env.sb, env.public_test_command, timeout, changes))
    if res.exit_code is None:  # the sandbox failed, not the tests
        raise SandboxError(f"the public tests could not run: {res.reason or res.output[-300:]}")
    # The guard may find tampering the tests themselves do not show (pytest's runner replaced
    # at import: every test "passes", exit status 0): that run failed, whatever pytest said.
    stopped = res.reason if res.reason.startswith(GUARD_STOPPED) else ""
    env.note_test(res.exit_code == 0 and not res.timed_out and not stopped)
    return summarize_test_output(res.output, res.exit_code, res.timed_out, res.seconds, stopped=stopped)


# --------------------------------------------------------------------------- edit


class EditArgs(ToolArgs):
    path: str = Field(description="File to change, relative to the repository root.")
    old: str = Field(description="The exact text to replace, copied from the file including "
                                 "indentation; it must occur exactly once.")
    new: str = Field(description="The text that replaces it.")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _edit(env: ToolContext, args: EditArgs) -> str:
    if args.old == "":
        raise ToolError("`old` is empty: quote the exact text to replace")
    if args.old == args.new:
        raise ToolError("`old` and `new` are the same: nothing would change")
    rel = resolve_path(env, args.path)
    if not env.edit_allowed():
        env.note_refused_edit(rel)
        failed = " (failed edits count)" if env.task.limits.count_failed_edits else ""
        return (f"Edit refused: the edit budget of this episode ({env.max_edits} "
                f"edit{'s' if env.max_edits != 1 else ''}{failed}) is used up. {rel} is unchanged.")
    text = read_text(env, rel)
    count = text.count(args.old)
    if count != 1:
        env.note_failed_edit(rel)
    if count == 0:
        hint = ""
        if args.old.strip() and args.old.strip() in text:
            hint = " (it occurs with different surrounding whitespace: copy it exactly, indentation included)"
        raise ToolError(f"`old` was not found in {rel}: 0 matches{hint}. Read the file and "
                        f"copy the text exactly")
    if count > 1:
        starts, i = [], text.find(args.old)
        while i != -1:
            starts.append(_line_of(text, i))
            i = text.find(args.old, i + 1)
        where = ", ".join(str(s) for s in starts[:10])
        raise ToolError(f"`old` is ambiguous in {rel}: {count} matches (at lines {where}); "
                        f"include more surrounding lines so that it matches exactly once")
    i = text.index(args.old)
    new_text = text[:i] + args.new + text[i + len(args.old):]
    refusal = env.rule_refusal(rel, new_text)
    if refusal is not None:
        return refusal
    try:
        env.sb.write_file(rel, new_text)
    except (OSError, ValueError) as e:
        raise ToolError(f"cannot write {rel!r}: {e}") from None
    env.note_edit(rel, new_text, before=text)
    first = _line_of(new_text, i)
    last = _line_of(new_text, i + max(len(args.new) - 1, 0))
    lines = new_text.split("\n")
    lo, hi = max(1, first - 2), min(len(lines), last + 2)
    snippet = number_lines("\n".join(lines[lo - 1:hi]), lo)
    return f"Edited {rel} (lines {first}-{last} now read):\n{snippet}"


# --------------------------------------------------------------------------- submit


class SubmitArgs(ToolArgs):
    answer: str | None = Field(default=None, description="Your final answer, for questions. "
                                                         "Leave out when you fixed a bug.")


def _submit(env: ToolContext, args: SubmitArgs) -> str:
    env.info.answer = args.answer
    return "Submitted."


# --------------------------------------------------------------------------- list / search


class ListArgs(ToolArgs):
    path: str = Field(default=".", description="Directory to list, relative to the repository root.")


def _list(env: ToolContext, args: ListArgs) -> str:
    rel = resolve_path(env, args.path, kind="dir")
    q = shlex.quote(rel if rel == "." else "./" + rel)  # never an option, whatever the name
    res = env.sb.exec(f"find {q} -path '*/.*' -prune -o -path '*/__pycache__' -prune -o -type f "
                      f"-print 2>/dev/null | sed 's|^\\./||' | sort | head -n 501",
                      timeout=env.tool_timeout("list"))
    files = [ln for ln in res.output.splitlines() if ln]
    if not files:
        return f"No files under {rel}."
    more = ""
    if len(files) > 500:
        files, more = files[:500], "\n... [more files not shown]"
    return "\n".join(files) + more


class SearchArgs(ToolArgs):
    pattern: str = Field(description="Text to look for (a plain string unless `regex` is true).")
    path: str = Field(default=".", description="File or directory to search, relative to the repository root.")
    regex: bool = Field(default=False, description="Treat `pattern` as an extended regular expression.")


def _search(env: ToolContext, args: SearchArgs) -> str:
    if not args.pattern:
        raise ToolError("`pattern` is empty")
    rel = resolve_path(env, args.path, kind="any")
    flag = "-E" if args.regex else "-F"
    cmd = (f"grep -rnI {flag} --exclude-dir='.?*' --exclude-dir=__pycache__ -e "
           f"{shlex.quote(args.pattern)} -- {shlex.quote(rel)} 2>&1 | sed 's|^\\./||' | head -n 201")
    res = env.sb.exec(cmd, timeout=env.tool_timeout("search"))
    lines = [ln for ln in res.output.splitlines() if ln]
    if not lines:
        return f"No matches for {args.pattern!r} under {rel}."
    if any(ln.startswith("grep:") for ln in lines) and args.regex:
        raise ToolError(f"bad regular expression: {lines[0][:200]}")
    if len(lines) > 200:
        lines = lines[:200] + ["... [more matches not shown]"]
    return "\n".join(lines)


# --------------------------------------------------------------------------- built-ins

register_tool(Tool(
    "read", "Show a file of the repository with numbered lines (optionally only lines start..end).",
    ReadArgs, _read))
register_tool(Tool(
    "test", "Run the repository's tests and show a summary: pass/fail counts and the failing "
    "assertions.", RunTestsArgs, _test))
register_tool(Tool(
    "edit", "Replace an exact snippet of a file with new text. `old` must match the file exactly "
    "(indentation included) and occur exactly once.", EditArgs, _edit))
register_tool(Tool(
    "submit", "Finish: submit your fix (or, for a question, your answer). The episode ends.",
    SubmitArgs, _submit, ends_episode=True))
register_tool(Tool("list", "List the files of the repository (or of one directory).", ListArgs, _list))
register_tool(Tool(
    "search", "Search the repository's files for a string; shows file:line:text for each match.",
    SearchArgs, _search))

"""Recognising a plain pytest invocation in a check or test command (no shell)."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class PytestCommand:
    env: list[str]
    """Leading `NAME=value` assignments."""
    python: str
    python_flags: list[str]
    args: list[str]
    """pytest's own arguments."""


_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON_RE = re.compile(r"^(?:.*/)?python(?:3(?:\.\d+)?)?$")
_PY_FLAGS = {"-B", "-u", "-O", "-OO", "-s", "-E", "-b", "-bb", "-I", "-P", "-q", "-v"}
_PY_FLAGS_ARG = {"-X", "-W"}


def _expands(command: str) -> bool:
    """Whether the shell would expand or split anything in `command`: a `$`, a backquote or a
    newline outside single quotes. Inside them the shell takes every character as it is, which
    is how a check names a test whose id holds one (`shlex.quote`: sqlparse's `$$` and backquoted
    SQL in its parametrised ids)."""
    state, escaped = "", False  # "": unquoted, "'" or '"': inside those quotes
    for ch in command:
        if escaped:
            escaped = False
        elif state == "'":
            state = "" if ch == "'" else state
        elif ch == "\\":
            escaped = True
        elif ch in "$`" or (ch == "\n" and not state):
            return True
        elif ch == '"':
            state = "" if state == '"' else '"'
        elif ch == "'" and not state:
            state = "'"
    return False


def parse_pytest_command(command: str) -> PytestCommand | None:
    """Recognise a plain pytest invocation: `[VAR=val ...] (pytest | python [flags] -m pytest)
    [args]`, with no shell operators or expansions. None for anything else."""
    if _expands(command):
        return None
    try:
        lex = shlex.shlex(command, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        tokens = list(lex)
    except ValueError:
        return None
    if any(t and all(c in "();<>|&" for c in t) for t in tokens):
        return None
    i = 0
    env: list[str] = []
    while i < len(tokens) and _ENV_RE.match(tokens[i]):
        env.append(tokens[i])
        i += 1
    if i >= len(tokens):
        return None
    head = tokens[i]
    if head.rsplit("/", 1)[-1] in ("pytest", "py.test"):
        return PytestCommand(env, "python", [], tokens[i + 1:])
    if not _PYTHON_RE.match(head):
        return None
    flags: list[str] = []
    i += 1
    while i < len(tokens) and tokens[i] != "-m":
        t = tokens[i]
        if t in _PY_FLAGS:
            flags.append(t)
        elif t in _PY_FLAGS_ARG and i + 1 < len(tokens):
            flags += [t, tokens[i + 1]]
            i += 1
        else:
            return None
        i += 1
    if i + 1 < len(tokens) and tokens[i] == "-m" and tokens[i + 1] == "pytest":
        return PytestCommand(env, head, flags, tokens[i + 2:])
    return None


def addopts_override(args: list[str]) -> str | None:
    """The value of the last `-o addopts=...` / `--override-ini=addopts=...` among pytest's
    `args` (which replaces the configuration file's `addopts`, as in pytest), or None."""
    found = None
    for i, a in enumerate(args):
        if a in ("-o", "--override-ini"):
            value = args[i + 1] if i + 1 < len(args) else ""
        elif a.startswith("--override-ini="):
            value = a[len("--override-ini="):]
        elif a.startswith("-o") and not a.startswith("--"):
            value = a[2:]
        else:
            continue
        key, eq, rest = value.partition("=")
        if eq and key.strip() == "addopts":
            found = rest
    return found

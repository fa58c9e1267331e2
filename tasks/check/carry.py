"""Which of the agent's file changes are carried into the hidden check (`carry`).

The check judges the agent's fix, not its test suite or its environment, so (1) test files and
files that configure or shadow the test runner are dropped (`tasks.is_test_path`); (2) a new file
is kept only when it is a plain Python module that shadows nothing (no `__pycache__`/`.pyc`,
no `.so`, no stdlib or test-runner module names, no `sitecustomize`); (3) a change whose added
lines name the test runner, interpreter start-up, the heap walkers or the harness is dropped
(the reference fix's own constructs are allowed). What changed code may reach otherwise (the
process, files, frames, builtins, ...) is the edit rules' to judge, on the AST and by an
allow-list (tasks.check.rules): a word list on the text refused honest fixes (`open(` of a
data file, `if __name__ == "__main__":`, an attribute named `signal`) and missed look-alike
spellings, so it no longer decides anything here.

(3) is defence in depth, a tripwire that a model stumbling on a hack will hit: code running
inside the test process can always be obfuscated past a pattern list. The runner's positive
evidence (every named test reported passed in a report written outside the workspace, and the
exit status) is the main defence. What this module does not guarantee: that a kept change is
harmless.
"""
from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Mapping

from fixrl.tasks.check.rules import SHADOW_NAMES, new_file_problem
from fixrl.tasks.format.materialize import is_test_path
from fixrl.tasks.format.reference import added_text, reference
from fixrl.tasks.format.schema import Task

__all__ = ["SHADOW_NAMES", "bad_new_file", "carry", "safe_relpath", "suspicious"]

# Always suspicious in added lines (unless the reference fix adds the same construct): library
# code has no business naming the test runner or the harness, or walking the heap (the one
# known way to find the runner's report key).
_HARD = [
    (r"\b_?pytest\b|\bpluggy\b|junit|\bconftest\b", "touches the test runner"),
    (r"\bsitecustomize\b|\busercustomize\b", "touches interpreter start-up"),
    (r"\bgc\s*\.\s*get_(objects|referrers|referents)\b", "walks the heap"),
    (r"(?i)\bfixrl\b|FIXRL_", "touches the harness"),
]

_HARD_RE = [(re.compile(p), why) for p, why in _HARD]


def suspicious(old: str, new: str, allowed: str = "") -> str | None:
    """Why the change old -> new looks like an attack on the check, or None. `allowed`: text
    whose constructs are legitimate here (the reference fix's added lines)."""
    added = added_text(old, new)
    if not added:
        return None
    for rx, why in _HARD_RE:
        m = rx.search(added)
        if m and not rx.search(allowed):
            return f"{why} (`{m.group(0)}`)"
    return None


def bad_new_file(path: str) -> str | None:
    """Why a file the agent created must not reach the check, or None for a plain module."""
    return new_file_problem(path)


def safe_relpath(path: str) -> bool:
    p = PurePosixPath(path)
    return bool(path) and not p.is_absolute() and ".." not in p.parts and "\x00" not in path


def carry(task: Task, changes: Mapping[str, str | None], buggy_root: Path,
          dropped: dict[str, str]) -> dict[str, str | None]:
    """The changes (path -> new text, None: deleted; original names) that go into the check on
    the buggy tree at `buggy_root`; each one left out goes into `dropped` with the reason. A
    change that leaves a file as it was is neither (e.g. a file renaming touched and the agent
    did not)."""
    kept: dict[str, str | None] = {}
    allowed: str | None = None
    for path, text in sorted(changes.items()):
        why = None
        if not safe_relpath(path):
            dropped[path] = "a path outside the repository"
            continue
        target = buggy_root / path
        if target.is_symlink() or not target.resolve().is_relative_to(buggy_root.resolve()):
            # writing through a link of the repository could land anywhere
            dropped[path] = "a symlink (or a path through one) in the repository"
            continue
        exists = target.is_file()
        old = target.read_text(encoding="utf-8", errors="replace") if exists else ""
        if text is not None and exists and old == text:
            continue
        if is_test_path(path):
            why = "a test or test-configuration file"
        elif text is None:
            if not exists:
                continue
        else:
            if not exists:
                why = bad_new_file(path) if not target.exists() else "not a regular file"
            if why is None:
                if allowed is None:
                    ref = reference(task) if task.fix else None
                    allowed = ref.added_text() if ref else ""
                why = suspicious(old, text, allowed)
        if why:
            dropped[path] = why
            continue
        kept[path] = text
    return kept

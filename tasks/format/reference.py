"""The reference fix as files: the buggy and fixed text of each file the task's fix touches.

The reward reads it for what a legitimate fix may add (`Reference.added_text`, tasks.check.carry)
and what each fixed file may do at run time (tasks.check.guard); the env reads it for the
first-edit judgement and the scripted oracle's edits. What it does not say: whether the fix is
right (that is `fixrl tasks validate`'s question).
"""
from __future__ import annotations

import difflib
import hashlib
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from fixrl.tasks.format.materialize import materialize
from fixrl.tasks.format.schema import Task


def added_text(old: str, new: str) -> str:
    """Lines of `new` that are not in `old` (inserted or replaced), joined."""
    a, b = old.splitlines(), new.splitlines()
    out: list[str] = []
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            out.extend(b[j1:j2])
    return "\n".join(out)


@dataclass(frozen=True)
class Reference:
    buggy: dict[str, str]
    """Original (un-renamed) text of each file the fix changes, in the buggy state."""
    fixed: dict[str, str | None]
    """The same files after the fix (None: the fix deletes it; a file the fix creates has no
    `buggy` entry)."""

    def added_text(self) -> str:
        """Every line the fix adds, joined (constructs a legitimate fix uses)."""

        return "\n".join(added_text(self.buggy.get(p, ""), t or "") for p, t in self.fixed.items())


_CACHE: dict[tuple[str, str, str], Reference | None] = {}
_LOCK = threading.Lock()


def _read_tree(root: Path) -> dict[str, bytes]:
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink() and ".git" not in p.relative_to(root).parts:
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def reference(task: Task) -> Reference | None:
    """The reference fix of `task` as files; None for tasks without a fix. Cached per task."""
    if not task.fix:
        return None
    key = (str(task.suite_dir or task.source_file or ""), task.id,
           hashlib.sha256(repr((task.repo, task.bug, sorted(task.bug_files.items()), task.fix)).encode()).hexdigest())
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]

    with tempfile.TemporaryDirectory(prefix="fixrl-ref-") as tmp:
        b = _read_tree(materialize(task, Path(tmp) / "buggy", "buggy"))
        f = _read_tree(materialize(task, Path(tmp) / "fixed", "fixed"))
    buggy, fixed = {}, {}
    for path in sorted(set(b) | set(f)):
        if b.get(path) == f.get(path):
            continue
        if path in b:
            buggy[path] = b[path].decode("utf-8", "replace")
        fixed[path] = f[path].decode("utf-8", "replace") if path in f else None
    ref = Reference(buggy, fixed)
    with _LOCK:
        _CACHE[key] = ref
    return ref

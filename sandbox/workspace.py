"""Host-side bookkeeping of a sandbox's initial workspace: its contents, the stamps the copy
had right after it was (re)written, and the plan that brings a changed copy back.

Both backends use it: the pristine contents live on the host (never where sandboxed code
could alter them), and a restore rewrites only what changed, was removed or was added.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from fixrl.sandbox.base import SandboxError

IGNORED_PARTS = ("__pycache__", ".pytest_cache")
"""Cache directories that `changed_files` does not report (restore still removes them)."""


@dataclass(frozen=True)
class Entry:
    kind: str
    """"f" file, "d" directory, "l" symlink."""
    mode: int
    data: bytes = b""
    """File content, or the symlink's target."""


@dataclass
class Pristine:
    """The initial workspace: entries by relative path, and the stamp each had in the
    sandbox after it was last written there (see `sandbox.inside.server.stamp`)."""

    entries: dict[str, Entry]
    stamps: dict[str, list] = field(default_factory=dict)

    def wire(self, rel: str) -> list:
        """[rel, kind, mode, data] as `sandbox.inside.server.apply` takes it (data not yet encoded)."""
        e = self.entries[rel]
        return [rel, e.kind, e.mode, e.data]


def read_tree(path: Path) -> dict[str, Entry]:
    """Read a host directory (symlinks kept as symlinks, special files skipped)."""
    path = Path(path)
    if not path.exists():
        raise SandboxError(f"workspace {path} does not exist: pass an existing directory")
    if not path.is_dir():
        raise SandboxError(f"workspace {path} is not a directory")
    entries: dict[str, Entry] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        rel_dir = os.path.relpath(dirpath, path)
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            st = os.lstat(full)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                entries[rel] = Entry("l", 0o777, os.readlink(full).encode("utf-8", "surrogateescape"))
            elif stat.S_ISDIR(st.st_mode):
                entries[rel] = Entry("d", mode | 0o700)
            elif stat.S_ISREG(st.st_mode):
                entries[rel] = Entry("f", mode | 0o600, Path(full).read_bytes())
        # os.walk lists symlinks to directories in dirnames but does not descend into them
    return entries


def plan_restore(pristine: Pristine, current: dict[str, list]) -> tuple[list[str], list[str]]:
    """(paths to delete, paths to write) that turn `current` (a scan) back into pristine.

    A file or symlink is kept only if its stamp is exactly the one recorded when it was
    written; a directory is kept if it is still a directory (its children are judged one
    by one; its mode is rewritten when it changed)."""
    delete: list[str] = []
    write: list[str] = []
    gone: list[str] = []  # deleted directories: their subtrees go with them
    for rel in sorted(current, key=lambda r: (r.count("/"), r)):
        if any(rel.startswith(d + "/") for d in gone):
            continue
        cur = current[rel]
        want = pristine.entries.get(rel)
        if want is None or want.kind != cur[0]:
            delete.append(rel)
            if cur[0] == "d":
                gone.append(rel)
        elif want.kind == "d":
            if cur[1] != want.mode:
                write.append(rel)
        elif cur != pristine.stamps.get(rel):
            write.append(rel)  # apply() removes the old one first
    deleted = set(delete)
    for rel in pristine.entries:
        gone_now = rel not in current or rel in deleted or any(rel.startswith(d + "/") for d in gone)
        if gone_now and rel not in write:
                write.append(rel)
    return delete, write


def changed_candidates(pristine: Pristine, current: dict[str, list]) -> tuple[list[str], list[str]]:
    """(files/symlinks whose stamp differs or that are new, pristine files now missing),
    skipping caches. Candidates still need a content comparison."""
    maybe: list[str] = []
    for rel, cur in current.items():
        if cur[0] not in ("f", "l") or is_ignored(rel):
            continue
        if cur != pristine.stamps.get(rel):
            maybe.append(rel)
    missing = [rel for rel, e in pristine.entries.items()
               if e.kind in ("f", "l") and not is_ignored(rel)
               and (rel not in current or current[rel][0] != e.kind)]
    return maybe, missing


def is_ignored(rel: str) -> bool:
    parts = rel.split("/")
    return any(p in IGNORED_PARTS for p in parts) or rel.endswith(".pyc")


def diff_contents(pristine: Pristine, maybe: list[str], missing: list[str],
                  contents: dict[str, bytes | None]) -> dict[str, str | None]:
    """relative path -> new text (None: deleted) for candidates whose bytes really changed."""
    out: dict[str, str | None] = {}
    for rel in maybe:
        data = contents.get(rel)
        if data is None:
            continue
        old = pristine.entries.get(rel)
        if old is not None and old.kind in ("f", "l") and old.data == data:
            continue
        out[rel] = data.decode("utf-8", "replace")
    for rel in missing:
        if rel not in out:
            out[rel] = None
    return dict(sorted(out.items()))

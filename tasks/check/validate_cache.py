"""Reusing validation results: a task whose inputs have not changed since it was validated is
not validated again.

The cache lives in the suite directory, `.fixrl-cache/validate.json`, one entry per task id:
the key it was validated under and its result. The key is a hash of everything a verdict
depends on:
- the loaded task (every field, with the text of its bug and fix patches and check files
  resolved, so a change in `suite.yaml`'s defaults or in a patch file counts) and the bytes of
  its task file;
- the repository's content: every file's path and bytes (symlinks by target) under the
  repository directory, except what `tasks.format.materialize` strips before a sandbox sees it (`.git`,
  `__pycache__`, `*.pyc`, ...); a git repository + commit by the commit's tree id;
- the checking code (the bytes of the check package, of the task format modules a verdict
  depends on, and of every file of `fixrl.sandbox.inside`: the check runner and its runtime
  guard, the exec server, the zygote), the Python version, and the run's backend, image and repeats.
A result that says the sandbox itself failed, or that validation crashed, is not stored: it
says nothing about the task. The file is replaced atomically (written to `.partial`, then
renamed); a file that cannot be read is ignored with a warning and rewritten.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

from fixrl.sandbox import shipping
from fixrl.tasks.format.loader import repo_path
from fixrl.tasks.format.materialize import STRIP_DIRS, STRIP_FILES, STRIP_SUFFIXES
from fixrl.tasks.format.schema import GitRepo, Task

CACHE_DIR = ".fixrl-cache"
CACHE_FILE = "validate.json"
FORMAT = 1
# Every module of the check package, and those of the task format a verdict depends on.
_FORMAT_MODULES = ("materialize.py", "pytest_command.py", "schema.py")
_UNCACHEABLE = ("sandbox error", "validation crashed")


def checking_code_hash() -> str:
    """A hash of the modules that decide a verdict: a new check runner invalidates the cache."""
    h = hashlib.sha256(sys.version.encode())
    check = Path(__file__).parent
    files = sorted(check.glob("*.py")) + [check.parent / "format" / name for name in _FORMAT_MODULES]
    for path in files:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    for rel in shipping.package_files():  # what runs in the sandbox: the runner, the server, the zygote
        h.update(b"inside/" + rel.encode() + b"\0" + (shipping.INSIDE_DIR / rel).read_bytes())
    return h.hexdigest()


def tree_hash(root: Path) -> str:
    """A hash of a directory's content: relative paths and bytes of its files (symlinks by
    target), skipping exactly what `tasks.format.materialize` strips, so that running the tests in the
    repository (caches, byte-code) does not count as a change."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if not (d in STRIP_DIRS and not os.path.islink(os.path.join(dirpath, d))))
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in sorted(filenames + links):
            if name in STRIP_FILES or name.endswith(STRIP_SUFFIXES):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if os.path.islink(full):
                h.update(b"L" + rel.encode() + b"\0" + os.readlink(full).encode() + b"\0")
            elif os.path.isfile(full):
                with open(full, "rb") as f:
                    data = f.read()
                h.update(b"F" + rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
        dirnames[:] = [d for d in dirnames if d not in links]
    return h.hexdigest()


class ValidationCache:
    """One validation run's view of a suite's cache: `get` before validating a task, `put` after,
    `save` at the end. `note` receives warnings (a corrupt or unwritable cache file)."""

    def __init__(self, suite_dir: Path, *, backend: str, repeats: int, image: str | None,
                 note: Callable[[str], None] | None = None) -> None:
        self.path = Path(suite_dir) / CACHE_DIR / CACHE_FILE
        self.note = note or (lambda _msg: None)
        self.settings = {"format": FORMAT, "code": checking_code_hash(), "backend": backend,
                         "repeats": int(repeats), "image": image}
        self.repo_hashes: dict[str, str | None] = {}
        """Repository hash per resolved repository path (and commit), computed once per run."""
        self.entries = self._load()
        self.changed = False

    def _load(self) -> dict[str, dict]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("tasks"), dict):
                raise ValueError("not a fixrl validation cache of this version")
            return data["tasks"]
        except (OSError, ValueError) as e:
            self.note(f"ignoring the validation cache {self.path} (unreadable: {e}); every task is validated "
                      "and the cache rewritten")
            return {}

    def _repo_hash(self, task: Task) -> str | None:
        src = repo_path(task).resolve()
        ident = f"{src}@{task.repo.commit}" if isinstance(task.repo, GitRepo) else str(src)
        if ident not in self.repo_hashes:
            self.repo_hashes[ident] = _git_tree(src, task.repo.commit) if isinstance(task.repo, GitRepo) \
                else (tree_hash(src) if src.is_dir() else None)
        return self.repo_hashes[ident]

    def key(self, task: Task) -> str | None:
        """The task's cache key, or None when it cannot be cached (its repository is missing)."""
        repo = self._repo_hash(task)
        if repo is None:
            return None
        file_bytes = b""
        if task.source_file is not None and Path(task.source_file).is_file():
            file_bytes = Path(task.source_file).read_bytes()
        blob = json.dumps({"settings": self.settings, "task": task.model_dump(mode="json"), "repo": repo,
                           "task_file": hashlib.sha256(file_bytes).hexdigest()}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, task: Task, key: str | None) -> dict | None:
        entry = self.entries.get(task.id)
        if key is None or not isinstance(entry, dict) or entry.get("key") != key:
            return None
        result = entry.get("result")
        return result if isinstance(result, dict) else None

    def put(self, task: Task, key: str | None, result: dict) -> None:
        if key is None or any(r.startswith(_UNCACHEABLE) for r in result.get("reasons", [])):
            if self.entries.pop(task.id, None) is not None:
                self.changed = True
            return
        self.entries[task.id] = {"key": key, "result": result}
        self.changed = True

    def save(self) -> None:
        """Write the cache atomically; a suite directory that cannot be written is a warning."""
        if not self.changed:
            return
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_text(json.dumps({"format": FORMAT, "tasks": self.entries}, indent=1, sort_keys=True),
                               encoding="utf-8")
            os.replace(partial, self.path)
        except OSError as e:
            self.note(f"could not write the validation cache {self.path}: {e}")


def _git_tree(repo: Path, commit: str) -> str | None:
    """The tree id of `commit` in the git repository `repo` (its content, by git's own hash)."""
    try:
        done = subprocess.run(["git", "-C", str(repo), "rev-parse", f"{commit}^{{tree}}"], capture_output=True,
                              text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None

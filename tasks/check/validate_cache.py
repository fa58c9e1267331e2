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
- the checking code: the bytes of every fixrl module validation imports (followed statically
  from `tasks.check.validate`: the check package with its host-side guard, the task format, the
  sandbox backends and the pinned hash seed) and of every file of `fixrl.sandbox.inside` (shipped
  into the sandbox: the check runner and its runtime guard, the exec server, the zygote); the
  Python version; the run's backend, image and repeats;
- what the task's sandboxes run: on Docker the id of the image (a rebuilt environment layer or
  base image is another id), on the local backend the distributions installed in the task's
  environment (or, without one, in the interpreter running fixrl). A task whose environment is
  not built yet has no key until it is.
A result that says the sandbox itself failed, or that validation crashed, is not stored: it
says nothing about the task. The file is replaced atomically (written to `.partial`, then
renamed); a file that cannot be read is ignored with a warning and rewritten.

What it does NOT guarantee: a change outside what is hashed (a system library, a Debian package
of the local host, a fixrl module loaded only by name at run time) is not seen; `--no-cache`
runs everything again.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import site
import subprocess
import sys
from pathlib import Path
from typing import Callable

from fixrl.sandbox import shipping
from fixrl.sandbox.environment import env_dir, is_env_tag
from fixrl.sandbox.factory import DEFAULT_IMAGE
from fixrl.tasks.format.loader import repo_path
from fixrl.tasks.format.materialize import STRIP_DIRS, STRIP_FILES, STRIP_SUFFIXES
from fixrl.tasks.format.schema import GitRepo, Task

CACHE_DIR = ".fixrl-cache"
CACHE_FILE = "validate.json"
FORMAT = 1
_ENTRY = "fixrl.tasks.check.validate"
"""Where the checking code is followed from: everything a verdict runs is imported from here."""
_ROOT = Path(__file__).resolve().parents[2]
"""The folder holding fixrl's top-level packages (`fixrl.tasks` is `_ROOT / "tasks"`)."""
_UNCACHEABLE = ("sandbox error", "validation crashed")


def checking_code_files() -> list[Path]:
    """The files that decide a verdict: every fixrl module `tasks.check.validate` imports,
    directly or through other fixrl modules (imports inside functions too, found by reading the
    source, so the list does not depend on what this process happens to have imported), and
    every file shipped into the sandbox."""
    seen: set[Path] = set()
    todo = [_ENTRY]
    while todo:
        for path in _module_files(todo.pop()):
            if path not in seen:
                seen.add(path)
                todo += _fixrl_imports(path)
    seen.update((shipping.INSIDE_DIR / rel).resolve() for rel in shipping.package_files())
    return sorted(seen)


def _module_files(name: str) -> list[Path]:
    """The files importing `name` (a dotted `fixrl.` name) runs: each package's `__init__.py` on
    the way and the module itself; none for a name that is no module (an imported attribute)."""
    parts = name.split(".")[1:]
    files = [_ROOT.joinpath(*parts[:i], "__init__.py") for i in range(1, len(parts) + 1)]
    files.append(_ROOT.joinpath(*parts).with_suffix(".py") if parts else _ROOT / "__init__.py")
    return [f for f in files if f.is_file()]


def _fixrl_imports(path: Path) -> list[str]:
    """The dotted names of the fixrl modules (and `from` names that may be modules) `path` imports."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names if a.name.startswith("fixrl.")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:   # relative: from the package `path` is in, `level - 1` folders up
                pkg = path.parent.parents[node.level - 2] if node.level > 1 else path.parent
                base = ".".join(["fixrl", *pkg.relative_to(_ROOT).parts] + ([base] if base else []))
            if base.startswith("fixrl."):
                names += [base] + [f"{base}.{a.name}" for a in node.names]
    return names


def checking_code_hash() -> str:
    """A hash of the code that decides a verdict (`checking_code_files`) and the Python version:
    a changed check runner, guard or sandbox backend invalidates the cache."""
    h = hashlib.sha256(sys.version.encode())
    for path in checking_code_files():
        h.update(path.relative_to(_ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
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
        self.backend = backend
        self.image = image
        self.repo_hashes: dict[str, str | None] = {}
        """Repository hash per resolved repository path (and commit), computed once per run."""
        self.runtimes: dict[str | None, str | None] = {}
        """What a sandbox image / environment tag runs (`runtime_id`), per image, once per run
        (`forget_runtimes` after building environments)."""
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

    def _runtime(self, task: Task) -> str | None:
        image = task.sandbox_image or self.image
        if image not in self.runtimes:
            self.runtimes[image] = runtime_id(self.backend, image)
        return self.runtimes[image]

    def forget_runtimes(self) -> None:
        """Look the runtimes up again (after environments were built or rebuilt)."""
        self.runtimes.clear()

    def key(self, task: Task) -> str | None:
        """The task's cache key, or None when it cannot be cached (its repository is missing, or
        its environment is not built yet)."""
        repo = self._repo_hash(task)
        runtime = self._runtime(task)
        if repo is None or runtime is None:
            return None
        file_bytes = b""
        if task.source_file is not None and Path(task.source_file).is_file():
            file_bytes = Path(task.source_file).read_bytes()
        blob = json.dumps({"settings": self.settings, "task": task.model_dump(mode="json"), "repo": repo,
                           "task_file": hashlib.sha256(file_bytes).hexdigest(), "runtime": runtime}, sort_keys=True)
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


def runtime_id(backend: str, image: str | None) -> str | None:
    """What the sandboxes of `image` (an environment's tag, a Docker image, None: the default)
    run on `backend`, as a string that changes when it is rebuilt: Docker: the image's id; local:
    the distributions (name-version) installed in the environment, or in fixrl's interpreter
    without one. None when it is not there (an environment not built yet)."""
    if backend == "docker":
        import docker.errors  # noqa: PLC0415 - the docker SDK only for the Docker backend

        from fixrl.sandbox.docker import client  # noqa: PLC0415 - likewise
        try:
            return client().images.get(image or DEFAULT_IMAGE).id
        except (docker.errors.DockerException, OSError):   # missing, or no daemon: said when sandboxes start
            return None
    if image is not None and is_env_tag(image):
        env = env_dir(image)
        if not (env / "bin" / "python").exists():
            return None
        return _distributions(list((env / "lib").glob("python3*/site-packages")))
    return _distributions([Path(d) for d in site.getsitepackages()])


def _distributions(dirs: list[Path]) -> str:
    """A hash of the distributions installed in `dirs` (their metadata folders' names carry
    name and version) and of the `.pth` files there (what they put on `sys.path`)."""
    h = hashlib.sha256()
    for d in sorted(dirs):
        if not d.is_dir():
            continue
        for entry in sorted(os.listdir(d)):
            if entry.endswith((".dist-info", ".egg-info")):
                h.update(entry.encode() + b"\0")
            elif entry.endswith(".pth") and (d / entry).is_file():
                h.update(entry.encode() + b"\0" + (d / entry).read_bytes() + b"\0")
    return h.hexdigest()


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

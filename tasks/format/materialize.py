"""Writing a task's repository in a given state: clean, buggy (bug applied) or fixed.

Nothing that could reveal the bug or the fix survives into the result: no `.git` (so no log,
reflog or remotes), no patch leftovers (`*.orig`, `*.rej`, `*.patch`), no byte-code or test
caches from running the clean version. Setup commands are not run here: they run inside the
sandbox (`run_setup`).
"""
from __future__ import annotations

import atexit
import itertools
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import weakref
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from fixrl.tasks.format.loader import TaskError, field_text, repo_path
from fixrl.tasks.format.schema import GitRepo, Task

if TYPE_CHECKING:
    from fixrl.sandbox.base import ExecResult, Sandbox

State = Literal["clean", "buggy", "fixed"]

STRIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox",
              ".nox", ".venv", ".fixrl-cache"}
STRIP_SUFFIXES = (".orig", ".rej", ".patch", ".pyc", ".pyo")
STRIP_FILES = {".git"}  # a submodule's or worktree's .git file points at history

_TEST_DIRS = {"tests", "test"}
# every file pytest reads configuration from (pytest 9 adds pytest.toml and .pytest.toml), not just
# the usual ones: an agent's `.pytest.ini` beside pyproject.toml would be the one pytest reads
_TEST_FILES = {"conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg",
               "pyproject.toml", "pytest.py",
               "sitecustomize.py", "usercustomize.py", ".pytest_cache", "noxfile.py"}
_SHADOW_DIRS = {"_pytest", "pytest", "pluggy", "__pycache__"}


def is_test_path(path: str) -> bool:
    """True for files the agent's diff must not carry into the check: tests and their
    configuration, and anything that could change how Python or pytest start (a module that
    shadows pytest, site customisation, .pth files, byte-code and compiled extensions that
    would be imported instead of the source)."""
    p = PurePosixPath(path.replace("\\", "/").lstrip("/"))
    parts = p.parts
    if not parts:
        return False
    name = parts[-1]
    if any(part in _TEST_DIRS or part in _SHADOW_DIRS for part in parts[:-1]):
        return True
    if name in _TEST_FILES or name in _SHADOW_DIRS or name in _TEST_DIRS:
        return True
    if name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")):
        return True
    return name.endswith((".pth", ".pyc", ".pyo", ".so", ".pyd"))


# ---------------------------------------------------------------- copying and stripping

def _ignore(directory: str, names: list[str]) -> set[str]:
    out = set()
    for n in names:
        full = os.path.join(directory, n)
        strip_dir = n in STRIP_DIRS and os.path.isdir(full) and not os.path.islink(full)
        if strip_dir or n in STRIP_FILES or n.endswith(STRIP_SUFFIXES):
            out.add(n)
    return out


def strip_tree(root: Path) -> None:
    """Remove history, VCS metadata, patch leftovers and caches from `root`, in place."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=True):
        for n in list(dirnames):
            full = os.path.join(dirpath, n)
            if n in STRIP_DIRS and not os.path.islink(full):
                shutil.rmtree(full, ignore_errors=True)
                dirnames.remove(n)
        for n in filenames:
            if n in STRIP_FILES or n.endswith(STRIP_SUFFIXES):
                os.unlink(os.path.join(dirpath, n))


def _export_git(repo: Path, commit: str, dest: Path, task_id: str) -> None:
    """`git archive` of one commit: files only, never the history."""
    proc = subprocess.Popen(["git", "-C", str(repo), "archive", "--format=tar", commit],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            tar.extractall(dest, filter="data")
    except tarfile.TarError as e:
        proc.kill()
        err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        raise TaskError(f"task {task_id}: cannot export {commit!r} from {repo}: {err or e}") from None
    finally:
        proc.wait(timeout=120)
    if proc.returncode != 0:
        err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        raise TaskError(f"task {task_id}: cannot export {commit!r} from {repo}: {err}")


def copy_repo(task: Task, dest: Path) -> None:
    """The clean repository (without history) into `dest` (created; must be empty if it exists)."""
    src = repo_path(task)
    if isinstance(task.repo, GitRepo):
        if not src.exists():
            raise TaskError(f"task {task.id}: git repository {src} not found (field 'repo.git')")
        dest.mkdir(parents=True, exist_ok=True)
        _export_git(src, task.repo.commit, dest, task.id)
    else:
        if not src.is_dir():
            raise TaskError(f"task {task.id}: repository directory {src} not found (field 'repo')")
        shutil.copytree(src, dest, symlinks=True, ignore=_ignore, dirs_exist_ok=True)


# ---------------------------------------------------------------- patches

def _git_env(cwd: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Never let git find (and apply the patch relative to) a repository above `cwd`.
    env["GIT_CEILING_DIRECTORIES"] = str(Path(cwd).resolve().parent)
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    return env


def _git_apply(cwd: Path, patch: str, extra: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "apply", "--whitespace=nowarn", "--recount", *extra],
                          input=patch.encode(), cwd=cwd, env=_git_env(cwd), capture_output=True, timeout=60)


def apply_patch(root: Path, patch: str, what: str = "patch") -> None:
    """Apply a unified diff to the files under `root` (with `git apply`, outside any repo).
    Paths with the usual a/ b/ prefixes (-p1) or without them (-p0) both work.
    Raises ValueError naming what failed to apply, and why."""
    if not patch.strip():
        return
    if not patch.endswith("\n"):
        patch += "\n"
    # -p1 (a/ b/ prefixes) or -p0; --unidiff-zero as a fallback for hand-written hunks with
    # less context after the change than before it, which git otherwise pins to the file's end.
    # `git apply` is all or nothing, so a failed attempt leaves the tree as it was.
    heads = [ln[4:].split("\t")[0].strip() for ln in patch.splitlines() if ln.startswith(("--- ", "+++ "))]
    prefixed = all(h.startswith(("a/", "b/")) for h in heads if h != "/dev/null")
    order = ("-p1", "-p0") if prefixed else ("-p0", "-p1")  # `--- src/x.py` must not lose `src/`
    first = None
    for extra in ([order[0]], [order[0], "--unidiff-zero"], [order[1]], [order[1], "--unidiff-zero"]):
        done = _git_apply(root, patch, extra)
        if done.returncode == 0:
            return
        first = first or done
    err = "; ".join(ln.strip() for ln in first.stderr.decode(errors="replace").splitlines() if ln.strip())
    raise ValueError(f"the {what} does not apply: {err or 'git apply failed'}")


def write_files(root: Path, files: dict[str, str], task: Task) -> None:
    for rel, value in files.items():
        text = field_text(task, value)
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_file():
            target.unlink()
        target.write_text(text, encoding="utf-8")


def _where(task: Task) -> str:
    return f"{task.source_file}: task {task.id}" if task.source_file else f"task {task.id}"


_cache_lock = threading.Lock()
_cache: dict[tuple[int, str], tuple[threading.Lock, Path]] = {}  # (id(task), state) -> its tree
_cache_root: Path | None = None
_cache_names = itertools.count()


def _cached_tree(task: Task, state: State) -> Path:
    """The tree of `task` in `state`, made once per process and Task object (dropped with it)."""
    global _cache_root
    key = (id(task), state)
    with _cache_lock:
        if _cache_root is None:
            _cache_root = Path(tempfile.mkdtemp(prefix="fixrl-trees-"))
            atexit.register(shutil.rmtree, _cache_root, True)
        entry = _cache.get(key)
        if entry is None:
            entry = _cache[key] = (threading.Lock(), _cache_root / f"{next(_cache_names)}-{state}")
            weakref.finalize(task, _forget, key)
    lock, tree = entry
    with lock:  # one thread builds it; the others wait for it
        if not tree.exists():
            part = tree.with_name(tree.name + ".part")
            shutil.rmtree(part, ignore_errors=True)
            materialize(task, part, state)
            part.rename(tree)
    return tree


def cached_tree(task: Task, state: State) -> Path:
    """The process-wide copy of `task` in `state` (made on first use; never write into it)."""
    return _cached_tree(task, state)


def _forget(key: tuple[int, str]) -> None:
    with _cache_lock:
        entry = _cache.pop(key, None)
    if entry is not None:
        shutil.rmtree(entry[1], ignore_errors=True)


def materialize(task: Task, dest: Path, state: State = "buggy", *, cache: bool = False) -> Path:
    """Write the repository in `state` into `dest` (created; must be empty if it exists):
    clean = the repository as given; buggy = clean + `bug` (or `bug_files`); fixed = buggy +
    `fix`. No history, no patch files; setup is not run. Raises TaskError naming the task
    and the patch that did not apply.

    cache: copy the tree made by the first such call for this Task object in this process
    (rollouts materialize a task's buggy state twice an episode). A repository changed on disk
    after that first call is not seen until the task is loaded again."""
    if state not in ("clean", "buggy", "fixed"):
        raise ValueError(f"state must be clean, buggy or fixed, not {state!r}")
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"materialize: {dest} is not empty")
    if cache:
        shutil.copytree(_cached_tree(task, state), dest, symlinks=True, dirs_exist_ok=True)
        return dest
    copy_repo(task, dest)
    if state in ("buggy", "fixed"):
        if task.bug is not None:
            try:
                apply_patch(dest, field_text(task, task.bug), "bug patch to the clean repository")
            except ValueError as e:
                raise TaskError(f"{_where(task)}: field 'bug': {e}") from None
        if task.bug_files:
            write_files(dest, task.bug_files, task)
    if state == "fixed" and task.fix is not None:
        try:
            apply_patch(dest, field_text(task, task.fix), "fix patch to the buggy repository")
        except ValueError as e:
            raise TaskError(f"{_where(task)}: field 'fix': {e}") from None
    strip_tree(dest)
    return dest


def excerpt(output: str, head: int = 12, tail: int = 4, width: int = 200) -> str:
    """A command's output shortened for a message: its first `head` lines (where the cause
    usually is: the first error, the missing module) and last `tail`, each cut at `width`."""
    lines = [line if len(line) <= width else line[:width] + " ..." for line in output.strip().splitlines()]
    if len(lines) > head + tail:
        lines = [*lines[:head], f"... ({len(lines) - head - tail} more lines) ...", *lines[-tail:]]
    return "\n".join(lines)


def run_setup(task: Task, sb: Sandbox) -> list[ExecResult]:
    """Run the task's setup commands in the sandbox's workspace; TaskError if one fails or
    times out (SandboxError passes through: the sandbox, not the task, failed)."""
    results = []
    for cmd in task.setup:
        res = sb.exec(cmd, timeout=task.limits.setup_timeout)
        results.append(res)
        if res.timed_out:
            raise TaskError(f"{_where(task)}: setup command {cmd!r} timed out after "
                            f"{task.limits.setup_timeout:g}s")
        if res.exit_code != 0:
            raise TaskError(f"{_where(task)}: setup command {cmd!r} failed with exit status "
                            f"{res.exit_code} (sandboxes have no network: setup cannot download "
                            f"packages):\n{excerpt(res.output)}")
    return results


# ---------------------------------------------------------------- diffs

def diff_dirs(old: Path, new: Path) -> str:
    """A unified diff (git format, a/ b/ prefixes) that turns directory `old` into `new`,
    ignoring history, caches and patch leftovers. '' when they are the same."""
    with tempfile.TemporaryDirectory(prefix="fixrl-diff-") as tmp:
        t = Path(tmp)
        env = _git_env(t)
        env.update({"GIT_DIR": str(t / "git"), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})

        def git(*args: str, cwd: Path = t, **kw) -> str:
            res = subprocess.run(["git", *args], env={**env, **kw}, cwd=cwd, capture_output=True, timeout=120)
            if res.returncode != 0:
                raise RuntimeError(f"git {args[0]} failed: {res.stderr.decode(errors='replace').strip()}")
            return res.stdout.decode("utf-8", errors="replace")

        git("init", "-q", "--bare", str(t / "git"))
        trees = []
        for side, src in (("a", old), ("b", new)):
            shutil.copytree(src, t / side, symlinks=True, ignore=_ignore)
            kw = {"GIT_WORK_TREE": str(t / side), "GIT_INDEX_FILE": str(t / f"index-{side}")}
            git("-c", "core.autocrlf=false", "add", "-A", "-f", ".", cwd=t / side, **kw)
            trees.append(git("write-tree", **kw).strip())
        return git("diff", "--binary", "--no-renames", "--no-color", "--no-ext-diff", trees[0], trees[1])


def diff_files(old: dict[str, str | None], new: dict[str, str | None]) -> str:
    """A unified diff between two sets of file contents (path -> text, None = absent)."""
    with tempfile.TemporaryDirectory(prefix="fixrl-diff-") as tmp:
        for side, files in (("old", old), ("new", new)):
            root = Path(tmp) / side
            root.mkdir()
            for rel, text in files.items():
                if text is not None:
                    (root / rel).parent.mkdir(parents=True, exist_ok=True)
                    (root / rel).write_text(text, encoding="utf-8")
        return diff_dirs(Path(tmp) / "old", Path(tmp) / "new")


def changed_paths(patch: str) -> list[str]:
    """Paths a unified diff touches (its `+++`/`---` targets, without a/ b/ prefixes)."""
    out: list[str] = []
    for line in patch.splitlines():
        if line.startswith(("+++ ", "--- ")):
            path = line[4:].split("\t")[0].strip()
            if path == "/dev/null":
                continue
            if path.startswith(("a/", "b/")):
                path = path[2:]
            if path not in out:
                out.append(path)
    return out

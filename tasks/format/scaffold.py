"""`fixrl tasks new`: a task file from a repository, a bug patch and a test file.

The test file becomes the hidden check (its node ids, collected by pytest in a sandbox, are
the tests the check must see pass); the reference fix is the reverse of the bug patch,
computed by diffing the buggy state against the clean one.
"""
from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from fixrl.sandbox import open_sandbox
from fixrl.sandbox.environment import EnvBuildError
from fixrl.tasks.format.environment import detect_and_build
from fixrl.tasks.format.loader import TaskError, load_suite_config, stored_path
from fixrl.tasks.format.materialize import apply_patch, changed_paths, copy_repo, diff_dirs, strip_tree
from fixrl.tasks.format.schema import TASK_ID_RE, Task
from fixrl.tasks.format.staging import write_into

ISSUE_PLACEHOLDER = ("TODO: describe the symptom the way a user would report it: what was called, what "
                     "was expected, what happened. Do not describe the fix.")


@dataclass
class Scaffold:
    task_file: Path
    task_id: str
    tests: list[str]
    """The node ids collected from the test file."""
    check_dest: str
    """Where the hidden test file lands in the repository at check time."""
    visible: bool
    """True when the test file is part of the repository (the agent can read it)."""


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.\-]+", "-", text).strip("-.") or "task"
    return slug if TASK_ID_RE.match(slug) else f"t-{slug}"


def parse_collected(output: str, dest: str) -> list[str]:
    """Node ids from `pytest --collect-only -q` output."""
    ids = []
    for line in output.splitlines():
        line = line.strip()
        if "::" in line and line.split("::", 1)[0] == dest and " " not in line.split("[", 1)[0]:
            ids.append(line)
    return ids


def collect_tests(workspace: Path, dest: str, backend: str = "local", timeout: float = 120.0,
                  image: str | None = None) -> list[str]:
    """Collect the node ids of one test file by running pytest in a sandbox (of `image`: an
    environment's tag, sandbox.environment)."""

    cmd = (f"python -m pytest --collect-only -q -p no:cacheprovider -o addopts= --rootdir=. "
           f"'{dest}'")
    with open_sandbox(workspace, backend=backend, image=image) as sb:
        res = sb.exec(cmd, timeout=timeout)
    ids = parse_collected(res.output, dest)
    if not ids:
        tail = res.output.strip()[-600:]
        raise TaskError(f"no tests collected from {dest} (pytest exit {res.exit_code}"
                        f"{', timed out' if res.timed_out else ''}):\n{tail}")
    return ids


def passes_on(workspace: Path, dest: str, backend: str = "local", timeout: float = 120.0,
              image: str | None = None) -> bool:
    """Whether the test file `dest` passes in `workspace` (pytest exit 0), run in a sandbox of
    `image` (an environment's tag, or None)."""
    cmd = f"python -m pytest -q -p no:cacheprovider -o addopts= --rootdir=. '{dest}'"
    with open_sandbox(workspace, backend=backend, image=image) as sb:
        res = sb.exec(cmd, timeout=timeout)
    return res.exit_code == 0 and not res.timed_out


def new_task(repo: Path, bug: Path, test: Path, out: Path, task_id: str | None = None,
             issue: str | None = None, backend: str = "local",
             progress: Callable[[str], None] = lambda line: None) -> Scaffold:
    """Write `out/tasks/<id>.yaml` (+ `out/checks/<id>/`: bug.patch, fix.patch, the test file).
    The repository's environment (tasks.format.environment) is detected, built (`progress` gets
    its lines) and written into the task unless the suite.yaml names one."""
    repo, bug, test, out = Path(repo), Path(bug), Path(test), Path(out)
    if not repo.is_dir():
        raise TaskError(f"--repo {repo}: directory not found")
    if not bug.is_file():
        raise TaskError(f"--bug {bug}: patch file not found")
    if not test.is_file():
        raise TaskError(f"--test {test}: test file not found")
    bug_text = bug.read_text(encoding="utf-8")
    if not bug_text.strip():
        raise TaskError(f"--bug {bug}: the patch is empty")
    task_id = task_id or _slug(f"{repo.resolve().name}-{bug.stem}")
    if not TASK_ID_RE.match(task_id):
        raise TaskError(f"--id {task_id!r}: use letters, digits, '_', '.', '-'")
    task_file = out / "tasks" / f"{task_id}.yaml"
    if task_file.exists():
        raise TaskError(f"{task_file} already exists: choose another --id or remove it")

    try:
        dest = test.resolve().relative_to(repo.resolve()).as_posix()
        visible = True
    except ValueError:
        dest = f"tests/{test.name}"
        visible = False
    if not test.name.endswith(".py"):
        raise TaskError(f"--test {test}: expected a Python test file (test_*.py)")

    with tempfile.TemporaryDirectory(prefix="fixrl-new-") as tmp:
        clean, buggy = Path(tmp) / "clean", Path(tmp) / "buggy"
        probe = Task(id=task_id, repo=str(repo.resolve()), issue="x", fix="x\n",
                     check={"command": "python -m pytest -q"})
        copy_repo(probe, clean)
        strip_tree(clean)
        shutil.copytree(clean, buggy, symlinks=True)
        try:
            apply_patch(buggy, bug_text, "bug patch")
        except ValueError as e:
            raise TaskError(f"--bug {bug}: {e} (to {repo})") from None
        fix_text = diff_dirs(buggy, clean)
        if not fix_text.strip():
            raise TaskError(f"--bug {bug}: the patch changes nothing in {repo}")
        # Collect on the clean state with the test file in place (what the check will see).
        target = clean / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(test, target)
        try:
            env, tag = detect_and_build(clean, backend, progress)
        except EnvBuildError as e:
            raise TaskError(f"--repo {repo}: its environment (from its packaging files) cannot be built: {e}") from None
        tests = collect_tests(clean, dest, backend=backend, image=tag)
        shutil.copyfile(test, buggy / dest)
        if passes_on(buggy, dest, backend=backend, image=tag):
            raise TaskError(f"--test {test}: passes on the buggy repository (with --bug {bug} applied), so the "
                            "check would reward an agent that changes nothing; give a test that fails on the bug "
                            "(and passes once it is fixed)")

    checks = f"checks/{task_id}"
    touched = changed_paths(bug_text)
    data = {
        "id": task_id,
        "repo": stored_path(repo, out),
        "issue": issue or ISSUE_PLACEHOLDER,
        "bug": f"{checks}/bug.patch",
        "fix": f"{checks}/fix.patch",
        "check": {
            "files": {dest: f"{checks}/{test.name}"},
            "command": f"python -m pytest -q {dest}",
            "tests": tests,
        },
        "tags": ["hand"],
    }
    if touched:
        data["file"] = touched[0]
    if env is not None and (not (out / "suite.yaml").is_file() or load_suite_config(out).environment is None):
        data["environment"] = env
    files = {f"{checks}/bug.patch": bug_text if bug_text.endswith("\n") else bug_text + "\n",
             f"{checks}/fix.patch": fix_text, f"{checks}/{test.name}": test.read_text(encoding="utf-8"),
             f"tasks/{task_id}.yaml": yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)}
    if not (out / "suite.yaml").exists():
        # The loader finds a task's suite by its nearest suite.yaml: without one here, a suite.yaml
        # further up would become the base of the task's relative paths.
        files["suite.yaml"] = f"name: {out.resolve().name}\n"
    write_into(out, files)
    return Scaffold(task_file, task_id, tests, dest, visible)

"""SWE-bench interop: import SWE-bench-style instances as fixrl tasks, export tasks back.

The mapping (SWE-bench's base_commit is the BUGGY state and its `patch` is the fix):

    instance_id        -> id (characters outside [A-Za-z0-9_.-] become '-')
    repo               -> metadata.swebench.repo (the checkout is given with --checkout)
    base_commit        -> repo: {git: CHECKOUT, commit: base_commit}, no `bug`
    patch              -> fix
    test_patch         -> check.files (the files it touches, as they are after it is applied)
    problem_statement  -> issue
    FAIL_TO_PASS + PASS_TO_PASS -> check.tests (each list also kept in metadata.swebench)
    fixrl (extra field)         <-> split, tags, function, file, limits, public_tests, setup,
                                    image, environment, other metadata (export writes it;
                                    import restores it; else import detects the environment
                                    from the base commit's packaging files)

Export goes the other way. A task that is not already "a commit with no bug" (a plain
directory, or a bug patch on top of a commit) gets its buggy state committed into an export
repository (`repos_dir`, one per suite, a tag `fixrl/<id>` per task), whose commit becomes the
base_commit. Only pytest-style test ids (`path::name`) can be checked by fixrl's runner.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from fixrl.tasks.format.environment import detect_environment
from fixrl.tasks.format.loader import TaskError, load_suite, repo_path, stored_path
from fixrl.tasks.format.materialize import apply_patch, changed_paths, diff_files, materialize
from fixrl.tasks.format.schema import GitRepo, Suite, Task
from fixrl.tasks.format.staging import publish, staging_dir

REQUIRED = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement",
            "FAIL_TO_PASS", "PASS_TO_PASS")
_MAPPED = {"base_commit", "patch", "test_patch", "problem_statement"}
_FIXED_DATE = "2000-01-01T00:00:00+0000"
FIXRL_KEY = "fixrl"
"""An extra instance field (ignored by SWE-bench tools) carrying what SWE-bench has no field for."""
_CARRIED = ("split", "tags", "function", "file", "limits", "public_tests", "setup", "image", "environment")


def read_instances(path: Path) -> list[dict]:
    """Instances from a .json file (one object or a list) or a .jsonl file (one per line)."""
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"{path}: file not found")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            items = data if isinstance(data, list) else [data]
    except json.JSONDecodeError as e:
        raise TaskError(f"{path}: line {e.lineno}, column {e.colno}: invalid JSON: {e.msg}") from None
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise TaskError(f"{path}: instance [{i}] is not a JSON object")
        missing = [k for k in REQUIRED if k not in item]
        if missing:
            name = item.get("instance_id", f"[{i}]")
            raise TaskError(f"{path}: instance {name}: missing field(s) {', '.join(missing)}")
    return items


def _test_list(value: Any, field: str, where: str) -> list[str]:
    if isinstance(value, str):  # the HF dataset stores these lists as JSON strings
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            raise TaskError(f"{where}: field '{field}' is neither a list nor a JSON list") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(f"{where}: field '{field}' must be a list of test ids")
    return value


def _git(repo: Path, *args: str, env: dict | None = None, input: bytes | None = None) -> str:
    res = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, input=input,
                         env={**os.environ, **(env or {})}, timeout=300)
    if res.returncode != 0:
        raise TaskError(f"git {' '.join(args[:2])} in {repo} failed: {res.stderr.decode(errors='replace').strip()}")
    return res.stdout.decode("utf-8", errors="replace")


def _safe_id(instance_id: str) -> str:
    out = re.sub(r"[^A-Za-z0-9_.\-]+", "-", instance_id).strip("-.")
    return out if out and out[0].isalnum() else f"i-{out}"


def instance_to_task(inst: dict, checkout: Path, out: Path, where: str = "instance",
                     suite_dir: Path | None = None) -> Path:
    """Write one instance as a task file (and its patch / check files) under `out`, for the
    suite directory `suite_dir` (default: `out`; a staging directory writes for another)."""
    checkout, out = Path(checkout), Path(out)
    suite_dir = Path(suite_dir) if suite_dir is not None else out
    iid = str(inst["instance_id"])
    where = f"{where} {iid}"
    tid = _safe_id(iid)
    base = str(inst["base_commit"])
    if not checkout.exists():
        raise TaskError(f"--checkout {checkout}: not found (a local clone of {inst['repo']})")
    rev = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"],
                         capture_output=True, text=True)
    if rev.returncode != 0:
        raise TaskError(f"{where}: base_commit {base} is not in {checkout}: "
                        f"fetch it first (git -C {checkout} fetch origin {base})")
    f2p = _test_list(inst["FAIL_TO_PASS"], "FAIL_TO_PASS", where)
    p2p = _test_list(inst["PASS_TO_PASS"], "PASS_TO_PASS", where)
    tests = f2p + [t for t in p2p if t not in f2p]
    not_pytest = [t for t in tests if "::" not in t]
    if not_pytest:
        raise TaskError(f"{where}: test ids such as {not_pytest[0]!r} are not pytest node ids "
                        "(path::name); fixrl's check runner needs pytest tests")
    if not tests:
        raise TaskError(f"{where}: FAIL_TO_PASS and PASS_TO_PASS are both empty: nothing to check")

    probe = Task(id=tid, repo=GitRepo(git=str(checkout.resolve()), commit=base), issue="x", fix="x\n",
                 check={"command": "python -m pytest -q"})
    with tempfile.TemporaryDirectory(prefix="fixrl-swe-") as tmp:
        base_dir = materialize(probe, Path(tmp) / "base", "clean")
        environment = detect_environment(base_dir)
        test_paths = changed_paths(inst["test_patch"])
        existed = {p for p in test_paths if (base_dir / p).is_file()}
        try:
            apply_patch(base_dir, inst["test_patch"], "test_patch")
        except ValueError as e:
            raise TaskError(f"{where}: {e} (at base_commit {base})") from None
        after = {p: (base_dir / p).read_text(encoding="utf-8") for p in test_paths if (base_dir / p).is_file()}

    checks = out / "checks" / tid
    for rel, text in after.items():
        (checks / "files" / rel).parent.mkdir(parents=True, exist_ok=True)
        (checks / "files" / rel).write_text(text, encoding="utf-8")
    (checks / "fix.patch").write_text(inst["patch"], encoding="utf-8")
    files = sorted({t.split("::", 1)[0] for t in tests})
    public = sorted(p for p in existed if p in files)
    meta = {k: v for k, v in inst.items() if k not in _MAPPED and k != FIXRL_KEY}
    meta["FAIL_TO_PASS"], meta["PASS_TO_PASS"] = f2p, p2p
    data: dict[str, Any] = {
        "id": tid,
        "repo": {"git": stored_path(checkout, suite_dir), "commit": base},
        "issue": inst["problem_statement"] or f"(no problem statement in {iid})",
        "fix": f"checks/{tid}/fix.patch",
        "check": {
            "files": {p: f"checks/{tid}/files/{p}" for p in sorted(after)},
            "command": "python -m pytest -q " + " ".join(files),
            "tests": tests,
        },
        "tags": ["swebench", f"repo:{inst['repo']}"],
        "metadata": {"swebench": meta},
    }
    if public:
        data["public_tests"] = "python -m pytest -q " + " ".join(public)
    if environment is not None:  # the base commit's (an exported `environment` below wins)
        data["environment"] = environment
    touched = changed_paths(inst["patch"])
    if touched:
        data["file"] = touched[0]
    extra = inst.get(FIXRL_KEY)
    if isinstance(extra, dict):  # written by export: the fields SWE-bench has no place for
        extra = dict(extra)
        if isinstance(extra.get("metadata"), dict):
            data["metadata"] = {**extra.pop("metadata"), **data["metadata"]}
        data.update({k: v for k, v in extra.items() if k in _CARRIED})
    task_file = out / "tasks" / f"{tid}.yaml"
    task_file.parent.mkdir(parents=True, exist_ok=True)
    task_file.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8")
    return task_file


def import_instances(path: Path, checkout: Path, out: Path) -> list[Path]:
    """Import every instance of a .json / .jsonl file into suite `out`; returns the task files."""
    instances = read_instances(path)
    out = Path(out)
    stage = staging_dir(out)  # all instances or none: a bad one leaves the suite as it was
    try:
        if not (out / "suite.yaml").exists():
            (stage / "suite.yaml").write_text(f"name: {out.resolve().name}\n")
        written = [instance_to_task(inst, checkout, stage, where=str(path), suite_dir=out) for inst in instances]
        publish(stage, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return [out / f.relative_to(stage) for f in written]


# ---------------------------------------------------------------- export

def _commit_state(repo: Path, state: Path, message: str, tag: str) -> str:
    """Commit directory `state` (no parent) into `repo` and tag it; returns the commit sha."""
    with tempfile.TemporaryDirectory(prefix="fixrl-idx-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_WORK_TREE": str(state),
               "GIT_DIR": str(repo / ".git"), "GIT_AUTHOR_NAME": "fixrl", "GIT_AUTHOR_EMAIL": "fixrl@localhost",
               "GIT_COMMITTER_NAME": "fixrl", "GIT_COMMITTER_EMAIL": "fixrl@localhost",
               "GIT_AUTHOR_DATE": _FIXED_DATE, "GIT_COMMITTER_DATE": _FIXED_DATE}
        res = subprocess.run(["git", "-c", "core.autocrlf=false", "add", "-A", "-f", "."], cwd=state,
                             env={**os.environ, **env}, capture_output=True, timeout=300)
        if res.returncode != 0:
            raise TaskError(f"git add failed: {res.stderr.decode(errors='replace')}")
        tree = _git(repo, "write-tree", env=env).strip()
        sha = _git(repo, "commit-tree", tree, "-m", message, env=env).strip()
        _git(repo, "update-ref", f"refs/tags/{tag}", sha)
        return sha


def task_to_instance(task: Task, repos_dir: Path | None, suite_name: str) -> dict:
    """One task as a SWE-bench instance (TaskError if it cannot be expressed)."""
    if task.kind != "fix":
        raise TaskError(f"task {task.id}: question tasks have no SWE-bench form")
    swe = dict(task.metadata.get("swebench") or {})
    with tempfile.TemporaryDirectory(prefix="fixrl-export-") as tmp:
        buggy = materialize(task, Path(tmp) / "buggy", "buggy")
        if isinstance(task.repo, GitRepo) and task.bug is None and not task.bug_files:
            base = _git(repo_path(task), "rev-parse", f"{task.repo.commit}^{{commit}}").strip()
            repo_name = swe.get("repo") or repo_path(task).resolve().name
        else:
            if repos_dir is None:
                raise TaskError(f"task {task.id}: its buggy state is not a commit; give an export "
                                "repository directory (--repos) to commit it into")
            repos_dir.mkdir(parents=True, exist_ok=True)
            if not (repos_dir / ".git").exists():
                _git(repos_dir, "init", "-q")
            base = _commit_state(repos_dir, buggy, f"fixrl task {task.id}: buggy state", f"fixrl/{task.id}")
            repo_name = swe.get("repo") or f"fixrl/{suite_name}"
        old = {}
        for rel in task.check.files:
            p = buggy / rel
            old[rel] = p.read_text(encoding="utf-8", errors="replace") if p.is_file() else None
        test_patch = diff_files(old, dict(task.check.files))
    f2p, p2p = swe.get("FAIL_TO_PASS"), swe.get("PASS_TO_PASS")
    if not (isinstance(f2p, list) and isinstance(p2p, list)
            and sorted(set(f2p) | set(p2p)) == sorted(set(task.check.tests))):
        f2p, p2p = list(task.check.tests), []  # without a record, every check test is FAIL_TO_PASS
    inst = {k: v for k, v in swe.items() if k not in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    inst.update({
        "instance_id": swe.get("instance_id") or task.id,
        "repo": repo_name,
        "base_commit": base,
        "patch": task.fix or "",
        "test_patch": test_patch,
        "problem_statement": task.issue,
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
    })
    dumped = task.model_dump(mode="json")
    carried = {k: dumped[k] for k in _CARRIED if dumped.get(k) not in (None, [], {})}
    rest = {k: v for k, v in task.metadata.items() if k != "swebench"}
    if rest:
        carried["metadata"] = rest
    inst[FIXRL_KEY] = carried
    return inst


def export_suite(suite: Suite | Path, out_file: Path, repos_dir: Path | None = None
                 ) -> tuple[int, list[tuple[str, str]]]:
    """Write the suite's tasks as SWE-bench instances (JSONL). Returns (written, skipped with
    the reason for each)."""
    if not isinstance(suite, Suite):
        suite = load_suite(Path(suite))
    out_file = Path(out_file)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    written, skipped = 0, []
    with out_file.open("w", encoding="utf-8") as f:
        for task in suite.tasks:
            try:
                inst = task_to_instance(task, Path(repos_dir) if repos_dir else None, suite.name)
            except TaskError as e:
                skipped.append((task.id, str(e)))
                continue
            f.write(json.dumps(inst, ensure_ascii=False) + "\n")
            written += 1
    return written, skipped


__all__ = ["read_instances", "instance_to_task", "import_instances", "task_to_instance", "export_suite"]

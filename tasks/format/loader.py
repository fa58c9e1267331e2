"""Loading task files and suites, with errors that name the file and the field.

`load_suite(path)` raises `TaskError` on the first bad file; `load_suite_lenient(path)` (used
by `fixrl tasks validate`) keeps the good tasks and returns one error per bad file.
"""
from __future__ import annotations

import difflib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from fixrl.sandbox.environment import EnvBuildError, EnvSpec, build_environment
from fixrl.sandbox.factory import DEFAULT_IMAGE
from fixrl.tasks.format.environment import commit_tree, spec_of
from fixrl.tasks.format.schema import Check, EditRules, GitRepo, Limits, Suite, SuiteConfig, Task, rules_key_renamed


class TaskError(ValueError):
    """A task or suite is malformed (or cannot be materialised); the message names the file
    and the field, and says how to fix it."""


# ---------------------------------------------------------------- YAML with line numbers

# libyaml's parser where PyYAML was built with it (5-10x faster on suites of hundreds of files);
# the same safe constructors and error marks either way.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SAFE_LOADER):
    """SafeLoader that rejects duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False):
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key] + 1})", key_node.start_mark)
        try:
            seen[key] = key_node.start_mark.line
        except TypeError:  # unhashable key: let the default constructor complain
            pass
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(file: Path) -> Any:
    """Parse a YAML file; a syntax error becomes a TaskError with the line and column."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskError(f"{file}: file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise TaskError(f"{file}: cannot read: {e}") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        context = getattr(e, "context", None)
        detail = f"{problem} ({context})" if context and context != problem else problem
        raise TaskError(f"{file}: {where}invalid YAML: {detail}") from None


# ---------------------------------------------------------------- pydantic errors -> text

_MODELS: dict[str, type[BaseModel]] = {"check": Check, "limits": Limits, "repo": GitRepo, "rules": EditRules}
_UNION_TAGS = {"str", "int", "float", "bool", "none", "GitRepo", "Check", "Limits", "EditRules"}


def _clean_loc(loc: tuple) -> list[str | int]:
    out: list[str | int] = []
    for part in loc:
        if isinstance(part, str) and (part in _UNION_TAGS or "[" in part):
            continue  # union-member tags such as 'str' / 'GitRepo' / 'function-after[...]'
        out.append(part)
    return out


def _loc_text(loc: list[str | int]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _allowed(parent: list[str | int], root: type[BaseModel]) -> list[str] | None:
    model = root
    for part in parent:
        if not isinstance(part, str) or part not in _MODELS:
            return None
        model = _MODELS[part]
    return [n for n, f in model.model_fields.items() if not f.exclude]


def format_validation_error(err: ValidationError, root: type[BaseModel] = Task) -> list[str]:
    """One line per problem: `field 'a.b': message` (or the message alone for whole-task rules)."""
    items: list[tuple[list, str, str]] = []
    for e in err.errors():
        loc = _clean_loc(tuple(e["loc"]))
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if e["type"] == "extra_forbidden" and loc:
            allowed = _allowed(loc[:-1], root)
            name = str(loc[-1])
            msg = "unknown field"
            if allowed:
                close = difflib.get_close_matches(name, allowed, n=1)
                msg += f" (did you mean {close[0]!r}?)" if close else ""
                msg += f"; allowed: {', '.join(allowed)}"
        items.append((loc, e["type"], msg))
    # A union (`repo: str | GitRepo`) reports one error per member: keep the deeper ones.
    kept = [it for it in items
            if not any(len(o[0]) > len(it[0]) and o[0][:len(it[0])] == it[0] for o in items)]
    merged: dict[str, list[str]] = {}
    for loc, _, msg in kept:
        key = _loc_text(loc)
        if msg not in merged.setdefault(key, []):
            merged[key].append(msg)
    lines = []
    for key, msgs in merged.items():
        if key == "repo" and len(msgs) > 1:
            msgs = ["must be a directory path or a mapping {git: PATH, commit: REV}"]
        text = " / ".join(msgs)
        lines.append(f"field '{key}': {text}" if key else text)
    return lines


# ---------------------------------------------------------------- text-or-path fields

def resolve_text(value: str, suite_dir: Path, file_dir: Path | None, what: str) -> str:
    """Inline text (contains a newline) or a path relative to the suite (or the task file)."""
    if "\n" in value:
        return value
    candidates = [Path(value)] if Path(value).is_absolute() else [suite_dir / value]
    if file_dir is not None and not Path(value).is_absolute():
        candidates.append(file_dir / value)
    for c in candidates:
        if c.is_file():
            try:
                return c.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ValueError(f"cannot read {c}: {e}") from None
    raise ValueError(f"{what} file {value!r} not found (looked in {', '.join(str(c.parent) for c in candidates)}); "
                     "inline text must contain a newline")


def stored_path(target: Path, suite_dir: Path) -> str:
    """How fixrl's commands write a path into a task file (the loader reads any of these forms
    relative to the suite directory): relative to the suite directory when `target` is inside
    the suite directory's parent -- the suite itself, or a sibling such as `../upstream`, so the
    suite and its repository move together -- and absolute otherwise (a path climbing out of
    the suite's parent would break as soon as either moved)."""
    target, suite_dir = Path(target).resolve(), Path(suite_dir).resolve()
    if target == suite_dir.parent or suite_dir.parent in target.parents:
        return Path(os.path.relpath(target, suite_dir)).as_posix()
    return target.as_posix()


def field_text(task: Task, value: str) -> str:
    """A text-or-path field's text at run time. The loader has already resolved paths of
    tasks read from files; tasks built in Python may still hold a path (relative to
    `task.suite_dir`), or one-line inline text, which is taken as it is."""
    if "\n" in value:
        return value
    try:
        return resolve_text(value, task.suite_dir or Path.cwd(), None, "file")
    except ValueError:
        return value


def repo_path(task: Task) -> Path:
    """The task's repository directory (a plain dir, or the git repository of a GitRepo)."""
    raw = task.repo.git if isinstance(task.repo, GitRepo) else task.repo
    p = Path(raw).expanduser()
    if not p.is_absolute():
        p = (task.suite_dir or Path.cwd()) / p
    return p


def _resolve_fields(task: Task, file_dir: Path | None) -> list[str]:
    """Resolve text-or-path fields in place; check the repository exists. Returns problems."""
    problems: list[str] = []
    suite_dir = task.suite_dir or Path.cwd()

    def text(value: str, field: str, what: str) -> str:
        try:
            return resolve_text(value, suite_dir, file_dir, what)
        except ValueError as e:
            problems.append(f"field '{field}': {e}")
            return value

    if task.bug is not None:
        task.bug = text(task.bug, "bug", "patch")
    if task.fix is not None:
        task.fix = text(task.fix, "fix", "patch")
    task.bug_files = {k: text(v, f"bug_files.{k}", "bug") for k, v in task.bug_files.items()}
    task.check.files = {k: text(v, f"check.files.{k}", "check") for k, v in task.check.files.items()}

    path = repo_path(task)
    if isinstance(task.repo, GitRepo):
        if not path.exists():
            problems.append(f"field 'repo.git': repository {str(path)!r} not found")
        else:
            rev = subprocess.run(["git", "-C", str(path), "rev-parse", "--verify", "--quiet",
                                  f"{task.repo.commit}^{{commit}}"], capture_output=True, text=True)
            if rev.returncode != 0:
                problems.append(f"field 'repo.commit': {task.repo.commit!r} is not a commit of {path}"
                                if (path / ".git").exists() or path.suffix == ".git"
                                else f"field 'repo.git': {str(path)!r} is not a git repository")
    elif not path.is_dir():
        problems.append(f"field 'repo': directory {str(path)!r} not found (paths are relative to the "
                        f"suite directory {suite_dir})")
    if task.environment is not None and not problems:
        spec = environment_spec(task)
        try:
            spec.validate()
        except EnvBuildError as e:
            problems.append(str(e))
        else:
            task.env_tag = spec.tag()
    return problems


def build_environments(tasks: list[Task], backend: str, say: Callable[[str], None] = lambda line: None
                       ) -> dict[str, str]:
    """Build each distinct environment of `tasks` for `backend` (`say` gets the progress; a cached
    one is found); returns the tags that could not be built, with why. Every job that runs a
    task's tests calls this first: a sandbox cannot start on an environment not built."""
    broken: dict[str, str] = {}
    seen: set[str] = set()
    for task in tasks:
        if task.environment is None or task.env_tag is None or task.env_tag in seen:
            continue
        seen.add(task.env_tag)
        try:
            build_environment(environment_spec(task), backend, lambda line, t=task.env_tag: say(f"{t}: {line}"))
        except (EnvBuildError, ValueError) as e:
            broken[task.env_tag] = f"environment {task.env_tag} of task {task.id} could not be built: {e}"
    return broken


def environment_spec(task: Task) -> EnvSpec:
    """The task's `environment` as the sandbox layer builds it (its repository's path filled in)."""
    env = task.environment
    if env is None:
        raise ValueError(f"task {task.id} has no environment")
    repo = repo_path(task)
    if isinstance(task.repo, GitRepo):  # the commit's files, not the checkout's working tree
        repo = commit_tree(repo, task.repo.commit)
    return spec_of(env.model_dump(), repo, task.image or DEFAULT_IMAGE)


# ---------------------------------------------------------------- tasks and suites

def _merge(defaults: dict, data: dict) -> dict:
    out = dict(defaults)
    for k, v in data.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def find_suite_dir(file: Path) -> Path:
    for parent in file.resolve().parents:
        if (parent / "suite.yaml").is_file():
            return parent
    parent = file.parent
    return parent.parent if parent.name == "tasks" else parent


def task_defaults(config: SuiteConfig) -> dict:
    """The task fields a suite fills in: its `defaults`, with its `rules` under the task's own
    `rules` key (a task file's `rules` then override them field by field), and its
    `environment`."""
    if config.environment is not None:
        env = config.environment.model_dump(exclude_defaults=True)
        config = config.model_copy(update={"defaults": {"environment": env, **config.defaults}, "environment": None})
    if config.rules is None:
        return dict(config.defaults)
    rules = config.rules.model_dump(exclude_unset=True)
    return _merge(config.defaults, {"rules": _merge(config.defaults.get("rules") or {}, rules)})


def _build_task(data: Any, file: Path, label: str, defaults: dict, suite_dir: Path) -> Task:
    if not isinstance(data, dict):
        raise TaskError(f"{label}: a task must be a mapping of fields (id, repo, issue, check, ...), "
                        f"got {type(data).__name__}")
    if isinstance(data.get("id"), int):
        data = {**data, "id": str(data["id"])}
    try:
        # before merging: a task file's old `policy` key must override the suite's `rules`
        data = rules_key_renamed(data)
    except ValueError as e:
        raise TaskError(f"{label}: {e}") from None
    try:
        task = Task.model_validate(_merge(defaults, data))
    except ValidationError as e:
        lines = format_validation_error(e)
        raise TaskError("\n".join(f"{label}: {line}" for line in lines)) from None
    task.suite_dir = suite_dir
    task.source_file = file
    problems = _resolve_fields(task, file.parent)
    if problems:
        raise TaskError("\n".join(f"{label}: {p}" for p in problems))
    return task


def load_tasks(file: Path, defaults: dict | None = None, suite_dir: Path | None = None) -> list[Task]:
    """All tasks of one task file (a mapping is one task, a list is several)."""
    file = Path(file)
    suite_dir = Path(suite_dir) if suite_dir is not None else find_suite_dir(file)
    data = read_yaml(file)
    if data is None:
        raise TaskError(f"{file}: empty task file")
    if isinstance(data, list):
        return [_build_task(d, file, f"{file}: task[{i}]", defaults or {}, suite_dir)
                for i, d in enumerate(data)]
    return [_build_task(data, file, str(file), defaults or {}, suite_dir)]


def load_task(file: Path, defaults: dict | None = None, suite_dir: Path | None = None) -> Task:
    """The one task of a task file. `defaults` are task fields used where the file sets none;
    `suite_dir` (paths are relative to it) defaults to the nearest folder with a suite.yaml."""
    tasks = load_tasks(file, defaults, suite_dir)
    if len(tasks) != 1:
        raise TaskError(f"{file}: holds {len(tasks)} tasks; load it with load_suite")
    return tasks[0]


def load_suite_config(path: Path) -> SuiteConfig:
    file = Path(path) / "suite.yaml"
    if not file.is_file():
        return SuiteConfig()
    data = read_yaml(file)
    if data is None:
        return SuiteConfig()
    if not isinstance(data, dict):
        raise TaskError(f"{file}: must be a mapping (name, defaults, rules, tools, rename_pool, family_edits)")
    try:
        config = SuiteConfig.model_validate(data)
    except ValidationError as e:
        raise TaskError("\n".join(f"{file}: {line}" for line in format_validation_error(e, SuiteConfig))) from None
    allowed = [n for n, f in Task.model_fields.items() if not f.exclude]
    for key in config.defaults:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TaskError(f"{file}: field 'defaults.{key}': unknown task field{hint}; allowed: {', '.join(allowed)}")
    return config


def task_files(path: Path) -> list[Path]:
    """The suite's task files: `tasks/**/*.yaml` (or the root's `*.yaml` without a tasks/ folder)."""
    path = Path(path)
    if (path / "tasks").is_dir():
        files = [p for p in (path / "tasks").rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()]
    else:
        files = [p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()
                 and p.name not in ("suite.yaml", "suite.yml")]
    return sorted(files)


def load_suite_lenient(path: Path) -> tuple[Suite, list[tuple[Path, TaskError]]]:
    """Load every good task; one error per bad task file (duplicate ids are errors too).
    Suite-level problems (no such directory, a bad suite.yaml) still raise TaskError."""
    path = Path(path)
    if not path.exists():
        raise TaskError(f"{path}: suite directory not found")
    if not path.is_dir():
        raise TaskError(f"{path}: not a directory (a suite is a directory with task files under tasks/)")
    config = load_suite_config(path)
    tasks: list[Task] = []
    errors: list[tuple[Path, TaskError]] = []
    first_seen: dict[str, Path] = {}
    for file in task_files(path):
        try:
            loaded = load_tasks(file, task_defaults(config), path)
        except TaskError as e:
            errors.append((file, e))
            continue
        for task in loaded:
            if task.id in first_seen:
                errors.append((file, TaskError(
                    f"{file}: field 'id': duplicate task id {task.id!r} (also in {first_seen[task.id]})")))
                continue
            first_seen[task.id] = file
            tasks.append(task)
    suite = Suite(dir=path, name=config.name or path.resolve().name, description=config.description,
                  tasks=tasks, tools=config.tools, rename_pool=config.rename_pool,
                  family_edits=config.family_edits)
    unknown = sorted(set(config.family_edits) - set(suite.families)) if tasks and not errors else []
    if unknown:
        raise TaskError(f"{path / 'suite.yaml'}: field 'family_edits': {', '.join(map(repr, unknown))} "
                        f"is not the family of any task (families come from task tags `family:NAME`; "
                        f"present: {', '.join(suite.families) or 'none'}); fix the name or remove it")
    return suite, errors


def load_suite(path: Path) -> Suite:
    """Load a suite directory; raise TaskError (naming the file and field) on any bad task."""
    suite, errors = load_suite_lenient(path)
    if errors:
        more = f"\n({len(errors) - 1} more bad task file(s))" if len(errors) > 1 else ""
        raise TaskError(f"{errors[0][1]}{more}")
    if not suite.tasks:
        raise TaskError(f"{path}: no tasks found (task files are *.yaml under {Path(path) / 'tasks'})")
    return suite

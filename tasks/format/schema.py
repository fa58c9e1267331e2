"""The task format: what a user writes in a task YAML file.

Every field is validated by pydantic; `tasks.load_suite` turns a validation error into a
message that names the file and the field. Paths are relative to the suite directory.

A suite directory looks like this:

    my-suite/
      suite.yaml            # optional: name, defaults (any task field), rules, tools, rename_pool, family_edits
      repo/                 # the clean repository (or a git repository + commit per task)
      tasks/**/*.yaml       # task files: one task (a mapping) or several (a list) per file
      checks/<id>/...       # files the tasks refer to by path (hidden tests, patches)

A task file:

    id: add-sign
    repo: repo                      # or {git: ../upstream, commit: 1a2b3c}
    issue: add(1, 2) returns -1; I expected 3.
    bug: checks/add-sign/bug.patch  # clean -> buggy (or inline diff, or bug_files)
    fix: checks/add-sign/fix.patch  # buggy -> fixed (the reference fix)
    check:
      files: {tests/test_hidden.py: checks/add-sign/test_hidden.py}
      command: python -m pytest -q tests/test_hidden.py
      tests: [tests/test_hidden.py::test_add, tests/test_hidden.py::test_mul]
    tags: [family:wrong_arith]
    split: train
    rules: {relax: [imports]}       # the edit rules (docs/edit-rules.md); suite.yaml may set them too

Without a `tasks/` folder the suite root's own `*.yaml` files (not `suite.yaml`) are the task
files. Fields that hold text (`bug`, `fix`, `bug_files` values, `check.files` values) take
either the text inline (it then contains a newline) or a path to a file holding it; the
loader resolves paths, so a loaded Task always carries the text itself.
"""
from __future__ import annotations

import difflib
import re
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fixrl.tasks.format.pytest_command import parse_pytest_command

TASK_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
DEFAULT_TOOLS = ["read", "test", "edit", "submit"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _pytest_typo(command: str) -> str | None:
    """The program or `-m` module of `command` that looks like a misspelt `pytest` (`pytset`,
    `py.tset`), if any; other words (a `tests` folder) are not looked at."""
    words = command.split()
    named = [w for w in words if "=" not in w][:1] + [b for a, b in zip(words, words[1:]) if a == "-m"]
    for word in (w.rsplit("/", 1)[-1] for w in named):
        if word not in ("pytest", "py.test") and difflib.get_close_matches(word, ["pytest", "py.test"], cutoff=0.8):
            return word
    return None


def _check_rel_path(path: str) -> str:
    """A path inside the repository: relative, no `..`, not empty."""
    p = PurePosixPath(path)
    if not path or p.is_absolute() or ".." in p.parts or path.startswith("~"):
        raise ValueError(f"{path!r} must be a relative path inside the repository (no '..', not absolute)")
    return str(p)


class GitRepo(_Strict):
    """A git repository checked out at a commit (history is stripped before the agent sees it)."""

    git: str
    """Path to a local git repository, relative to the suite directory (or absolute)."""
    commit: str
    """Commit (or any rev-parse-able ref) to check out."""


class Check(_Strict):
    """The hidden check. Its files exist only in the check's own sandbox, never in the agent's."""

    files: dict[str, str] = Field(default_factory=dict)
    """Destination path inside the repository -> source path relative to the suite directory
    (or the file's text inline, when the value contains a newline). After loading: the text."""
    command: str
    """The check command, run in the repository root. For pytest commands the runner adds its
    own report; pass requires exit status 0 AND every test in `tests` reported as passed."""
    tests: list[str] = Field(default_factory=list)
    """Test node ids the check must see pass (FAIL_TO_PASS + PASS_TO_PASS). Empty: exit status
    only, which is allowed for non-pytest checks such as a question's answer checker (a pytest
    check with no tests listed needs every test it runs to pass, and at least one)."""
    timeout: float = Field(default=120.0, gt=0)
    """Seconds before the check is killed and counted as a fail."""

    @field_validator("files")
    @classmethod
    def _files_inside_repo(cls, v: dict[str, str]) -> dict[str, str]:
        return {_check_rel_path(k): val for k, val in v.items()}

    @field_validator("command")
    @classmethod
    def _command_not_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the check command is empty")
        return v

    @model_validator(mode="after")
    def _tests_need_pytest(self) -> Check:

        if self.tests and parse_pytest_command(self.command) is None:
            typo = _pytest_typo(self.command)
            if typo:   # the command is what is wrong, not the list
                raise ValueError(f"check command {self.command!r}: {typo!r} is not pytest (a typo for `pytest`?); "
                                 "write it as e.g. `python -m pytest -q tests/test_x.py`")
            raise ValueError(
                f"check command {self.command!r} is not a plain pytest command, but `tests` lists test ids, "
                "which only a plain pytest command can report (e.g. `python -m pytest -q tests/test_x.py`). "
                "Use a plain pytest command or leave `tests` empty.")
        return self

    @property
    def is_pytest(self) -> bool:

        return parse_pytest_command(self.command) is not None


class Limits(_Strict):
    max_turns: int = Field(default=8, ge=1)
    """Assistant turns before the episode ends as out of turns."""
    max_edits: int | None = Field(default=None, ge=0)
    """Applied edits allowed per episode; later edits use a turn and change nothing. None: no cap."""
    count_failed_edits: bool = False
    """Edits whose `old` text is not found (or is ambiguous) count against `max_edits` too. Set it
    where a suite's repairs are a few fixed snippets (`family_edits`): with failed edits free, an
    agent could try each family's snippet in turn without reading."""
    tool_timeout: float = Field(default=60.0, gt=0)
    """Seconds each tool call may run (the `test` tool's public test command included)."""
    setup_timeout: float = Field(default=300.0, gt=0)
    """Seconds each `setup` command may run."""


RULE_NAMES = ("files", "imports", "introspection", "computed-names", "exec", "comparison-dunders")
"""The edit rules by name (tasks.check.rules says what each refuses)."""

OLD_RULES_KEY = "policy"
"""The key task files and suite.yaml used for `rules` before it was renamed; still read."""


def rules_key_renamed(data: Any) -> Any:
    """`data` (a task's or suite.yaml's mapping) with the old key `policy` read as `rules`.
    Both at once is an error: which one was meant cannot be guessed."""
    if not isinstance(data, dict) or OLD_RULES_KEY not in data:
        return data
    if "rules" in data:
        raise ValueError(f"give `rules` only (`{OLD_RULES_KEY}` is its old name), not both")
    return {("rules" if k == OLD_RULES_KEY else k): v for k, v in data.items()}


class EditRules(_Strict):
    """What the agent may change and what the changed code may contain, judged on the AST of each
    changed file against the original file before anything runs (`tasks.check.rules`). An `edit` that
    breaks it is refused; a submitted state that breaks it is a fail; `fixrl tasks validate`
    requires the reference fix to pass it."""

    files: list[str] = Field(default_factory=lambda: ["**/*.py"])
    """Globs (relative to the repository root; `*` stays within a folder, `**/` spans folders)
    of the files the agent may change or create. Test files and test configuration are never
    carried into the check, whatever these say."""
    relax: list[str] = Field(default_factory=list)
    """Rules this task (or suite) does not apply, for a reference fix that needs what a rule
    refuses: any of files, imports, introspection, computed-names, exec, comparison-dunders."""
    allow_imports: list[str] = Field(default_factory=list)
    """Top-level modules a changed file may import even though neither it nor the repository
    did (the interpreter-reaching ones included)."""
    reason: str = ""
    """Why this task (or suite) widens the rules (e.g. "the reference fix reads os.environ"):
    asked for whenever `relax` or `allow_imports` is set, so that every widening is recorded next
    to it. `fixrl tasks rules-check` lists each widening with its reason and names those without
    one. A missing reason is not a load error: suites written before reasons were asked for keep
    loading."""

    @field_validator("relax")
    @classmethod
    def _known_rules(cls, v: list[str]) -> list[str]:
        unknown = [r for r in v if r not in RULE_NAMES]
        if unknown:
            raise ValueError(f"unknown rule(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(RULE_NAMES)}")
        return v

    @field_validator("files")
    @classmethod
    def _files_not_empty(cls, v: list[str]) -> list[str]:
        for glob in v:
            if not glob.strip() or glob.startswith("/") or ".." in PurePosixPath(glob).parts:
                raise ValueError(f"{glob!r} must be a glob relative to the repository root, e.g. 'src/**/*.py'")
        return v


class Environment(_Strict):
    """The Python packages a repository's tests need (sandbox.environment builds them: a
    virtual environment for the local backend, an image layer for Docker). Absent: the
    sandbox's own interpreter (fixrl's, or the image's) with pytest and nothing else."""

    install: bool = False
    """Install the repository itself: its dependencies and metadata (its code always runs from
    the workspace)."""
    extras: list[str] = Field(default_factory=list)
    """The repository's extras installed with it (e.g. `[test]`); needs `install: true`."""
    requirements: list[str] = Field(default_factory=list)
    """Requirement files, relative to the repository root (e.g. `requirements/tests.txt`)."""
    packages: list[str] = Field(default_factory=list)
    """More requirement specifiers (e.g. `attrs>=22`, `pytest-mock`)."""
    python: str | None = None
    """`major.minor` the environment is for; None: the Python running fixrl."""

    @field_validator("requirements")
    @classmethod
    def _requirements_inside_repo(cls, v: list[str]) -> list[str]:
        return [_check_rel_path(p) for p in v]

    @field_validator("python")
    @classmethod
    def _python_version(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"3\.\d+", str(v)):
            raise ValueError(f"{v!r}: give major.minor, e.g. '3.11'")
        return None if v is None else str(v)

    @model_validator(mode="after")
    def _extras_need_install(self) -> Environment:
        if self.extras and not self.install:
            raise ValueError("`extras` are the repository's own: set `install: true` too")
        return self


class Task(_Strict):
    id: str
    """Unique within a suite; letters, digits, `_`, `.`, `-`."""
    repo: str | GitRepo
    """A directory (relative to the suite) holding the clean repository, or a git repo + commit."""
    image: str | None = None
    """Docker image for this task's sandboxes; default: the base sandbox image (with an
    `environment`: the image its layer goes on)."""
    environment: Environment | None = None
    """The packages the repository's tests need (suite.yaml's `environment` fills it); None:
    none beyond pytest."""
    setup: list[str] = Field(default_factory=list)
    """Commands run in the repository after the bug is applied, before the agent starts."""
    kind: Literal["fix", "question"] = "fix"
    """`fix`: the agent changes the code; `question`: the agent submits an answer the check verifies."""
    issue: str
    """What the agent is told."""
    public_tests: str = "python -m pytest -q"
    """The command the agent's `test` tool runs."""
    check: Check
    bug: str | None = None
    """A unified diff (or a path to a .patch file) that turns the clean repo into the buggy one.
    None: the repository as given is already the buggy state (e.g. a SWE-bench base commit)."""
    bug_files: dict[str, str] = Field(default_factory=dict)
    """Alternative to `bug`: destination path -> buggy file content (or a path to it)."""
    fix: str | None = None
    """The reference fix: a unified diff against the buggy repo (or a path to a .patch file).
    Required for fix tasks."""
    answer: str | None = None
    """For question tasks: the reference answer (the check verifies the agent's answer; this is
    what the oracle submits). Required for question tasks."""
    function: str | None = None
    """The buggy function's name, used for per-episode renaming; None disables renaming."""
    file: str | None = None
    """The file holding the bug, relative to the repository root."""
    split: Literal["train", "heldout"] = "train"
    tags: list[str] = Field(default_factory=list)
    """Free labels; a tag `family:NAME` names the bug family (the generator's mutation operator)."""
    limits: Limits = Field(default_factory=Limits)
    rules: EditRules = Field(default_factory=EditRules)
    """The edit rules (files the agent may change, what the changed code may contain); the
    suite's `rules` fill what the task file does not set. The old key `policy` is still read."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything carried along untouched (e.g. a SWE-bench instance's extra fields, generator
    provenance). Never shown to the agent."""

    # Set by the loader, not by users.
    suite_dir: Path | None = Field(default=None, exclude=True)
    source_file: Path | None = Field(default=None, exclude=True)
    env_tag: str | None = Field(default=None, exclude=True)
    """The built environment's runtime name (`fixrl-env:<hash>`), from `environment`."""

    @model_validator(mode="before")
    @classmethod
    def _old_rules_key(cls, data: Any) -> Any:
        return rules_key_renamed(data)

    @field_validator("id")
    @classmethod
    def _id_chars(cls, v: str) -> str:
        if not TASK_ID_RE.match(v):
            raise ValueError(f"{v!r} is not a valid id: use letters, digits, '_', '.', '-' "
                             "(starting with a letter or digit)")
        return v

    @field_validator("bug_files")
    @classmethod
    def _bug_files_inside_repo(cls, v: dict[str, str]) -> dict[str, str]:
        return {_check_rel_path(k): val for k, val in v.items()}

    @field_validator("file")
    @classmethod
    def _file_inside_repo(cls, v: str | None) -> str | None:
        return None if v is None else _check_rel_path(v)

    @field_validator("issue")
    @classmethod
    def _issue_not_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the issue text is empty: write what the agent is told")
        return v

    @model_validator(mode="after")
    def _kind_fields(self) -> Task:
        if self.bug is not None and self.bug_files:
            raise ValueError("give either `bug` (a patch) or `bug_files` (file contents), not both")
        if self.kind == "fix" and not (self.fix and self.fix.strip()):
            raise ValueError("`fix` (the reference patch) is required for kind: fix")
        if self.kind == "question" and self.answer is None:
            raise ValueError("`answer` (the reference answer) is required for kind: question")
        return self

    @property
    def sandbox_image(self) -> str | None:
        """What the task's sandboxes run: its environment's tag (an image layer for Docker, a
        virtual environment for the local backend), else its `image`."""
        return self.env_tag or self.image

    @property
    def family(self) -> str | None:
        for tag in self.tags:
            if tag.startswith("family:"):
                return tag.split(":", 1)[1]
        return None


class FamilyEdit(_Strict):
    """An exact-snippet edit: `old` (replaced once, must occur exactly once) -> `new`."""

    old: str = Field(min_length=1)
    new: str


class SuiteConfig(_Strict):
    """The optional `suite.yaml` at a suite's root."""

    name: str | None = None
    """Suite name; default: the directory's name."""
    description: str = ""
    defaults: dict[str, Any] = Field(default_factory=dict)
    """Values for any task field, used where a task file does not set it (merged key by key
    into nested fields such as `limits` and `check`)."""
    tools: list[str] = Field(default_factory=lambda: list(DEFAULT_TOOLS))
    """The tools the agent gets on this suite's tasks."""
    rename_pool: list[str] = Field(default_factory=list)
    """Function names drawn from for per-episode renaming of the buggy function."""
    rules: EditRules | None = None
    """The edit rules of every task (any EditRules field: files, relax, allow_imports); a
    task's own `rules` override them field by field. The old key `policy` is still read."""
    environment: Environment | None = None
    """The packages every task's repository needs (a task's own `environment` overrides it key by key)."""
    family_edits: dict[str, FamilyEdit] = Field(default_factory=dict)
    """Each bug family's usual repair as one exact-snippet edit, for suites whose bugs leave a
    fixed marker. Scripted plans type it: the oracle wherever it gives the reference fix (so every
    fix of a family is written alike and a model learns which family it read, not each function's
    snippet), the blind baseline always (right exactly when its guessed family is the bug's)."""

    @model_validator(mode="before")
    @classmethod
    def _old_rules_key(cls, data: Any) -> Any:
        data = rules_key_renamed(data)
        if isinstance(data, dict) and "defaults" in data:
            data = {**data, "defaults": rules_key_renamed(data["defaults"])}
        return data


class Suite(BaseModel):
    """A loaded suite: its tasks plus the suite-level settings."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    dir: Path
    name: str
    description: str = ""
    tasks: list[Task] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=lambda: list(DEFAULT_TOOLS))
    rename_pool: list[str] = Field(default_factory=list)
    family_edits: dict[str, FamilyEdit] = Field(default_factory=dict)

    @property
    def families(self) -> list[str]:
        """Bug families present (from tags `family:X`), sorted."""
        return sorted({t.family for t in self.tasks if t.family})

    def split(self, name: str) -> list[Task]:
        """The tasks of a split (`train` or `heldout`), in suite order."""
        return [t for t in self.tasks if t.split == name]

    def get(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(f"no task {task_id!r} in suite {self.name!r} ({self.dir})")

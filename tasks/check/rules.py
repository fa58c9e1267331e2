"""The edit rules: what the agent may change, judged on the AST before anything runs.

`judge_change(path, original, new, rules, repo_modules)` compares the AST of a changed file with
the AST of its original (None: a new file) and returns the `Violation`s of the task's
`EditRules` (tasks.format.schema). What changed code may reach is stated positively
(tasks.check.allowed, docs/edit-rules.md); whatever the original file already does is allowed
as well: a file that spawns processes may keep doing so, a class module that defines `__eq__`
may gain another one. The rules (a task or suite may `relax` any of them in its own file):

- files: only files matching `rules.files` (default every Python file), never a test file; a
  new file only as a plain module that shadows no installed one (`new_file_problem`).
- imports: the original file's imports, the repository's own modules, PURE_STDLIB,
  `rules.allow_imports`, and third-party modules the repository's non-test sources import
  (none of INTERPRETER_MODULES); any other standard-library module only if the file itself
  imported it. Relative and `from` imports of a repository module are judged by the names
  they bring in (`from .compat import os`).
- introspection: no dunder outside ATTRIBUTE_DUNDERS (PROTOCOL_DUNDERS when defining a
  method), no name reaching interpreter state (frames, code objects, `_getframe`, ...), no
  private or listed name of a standard-library module (`random._os`, `string.Formatter`), in
  any spelling: attribute, name, keyword, string, format field.
- computed-names: getattr/setattr/delattr/hasattr (and operator.attrgetter/methodcaller) only
  with a name that can only be a safe literal; no vars()/globals()/locals()/dir(); none of
  them passed around as a value (`g = getattr`); `.format` only on literal strings.
- exec: no exec/eval/compile/__import__/breakpoint/exit/quit, `open` only to read, no
  os/posix/sys process, signal, file or environment calls, unless the original made the same.
- comparison-dunders: no `__eq__`-like dunder (COMPARISON_DUNDERS) defined, assigned or named,
  no class built by `type(name, bases, dict)` and no `functools.total_ordering`, unless the
  original file defines such dunders.

Not guaranteed (the check's runtime guard stands behind it): behaviour that needs none of these
names -- an existing object of the repository with a permissive `__eq__`, code that works out
the expected answer from data it may read, a deliberately slow or memory-hungry fix, what a
third-party module the repository uses can reach, which file a read-only `open` names.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
import re
import shutil
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable

from fixrl.tasks.check.allowed import PURE_STDLIB
from fixrl.tasks.check.guard import frame_readers
from fixrl.tasks.check.reach import (
    ALWAYS_IMPORTABLE,
    INTERPRETER_MODULES,
    Names,
    Walker,
    allowances,
    foreign_name_calls,
)
from fixrl.tasks.format.loader import field_text, repo_path
from fixrl.tasks.format.materialize import apply_patch, cached_tree, changed_paths, is_test_path, materialize
from fixrl.tasks.format.schema import RULE_NAMES, EditRules, GitRepo, Task

_STDLIB = frozenset(sys.stdlib_module_names)


@dataclass(frozen=True)
class Violation:
    """One way a changed file breaks the edit rules."""

    rule: str
    """The rule broken (schema.RULE_NAMES)."""
    path: str
    """The changed file, relative to the repository root."""
    line: int
    """Line in the changed file (0: the file as a whole)."""
    message: str
    """What was found and why the rule refuses it."""

    def __str__(self) -> str:
        return f"{self.rule}: {self.path}:{self.line}: {self.message}"


_PARSE_LOCK = threading.Lock()  # CPython 3.11's parser is not safe in several threads at once


def as_executed(text: str) -> str:
    """The source Python compiles from a file holding `text` as UTF-8. A coding declaration makes
    the interpreter decode the bytes its own way (`unicode_escape` turns the characters `\\x0a`
    of a comment into a new line, UTF-7 its `+AAo-`), so the rules judge this, never the text as
    written. A declaration Python cannot decode leaves the text as it is: such a module cannot be
    imported, so it cannot run."""
    try:
        return importlib.util.decode_source(text.encode("utf-8"))
    except (SyntaxError, UnicodeError, LookupError, ValueError):
        return text


def _parse(text: str) -> ast.Module | None:
    try:
        with _PARSE_LOCK:
            return ast.parse(as_executed(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# ---------------------------------------------------------------- files

_SHADOW_NAMES = set(sys.stdlib_module_names) | {
    "sitecustomize", "usercustomize", "conftest", "pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging",
    "exceptiongroup", "tomli", "attr", "attrs", "setuptools", "pkg_resources", "_distutils_hack",
    "typing_extensions", "pip", "site", "__main__", "hypothesis", "xdist", "coverage", "six",
}
SHADOW_NAMES = frozenset(_SHADOW_NAMES)
"""Names a new file or folder may not take: they would shadow a module the test run imports
(the repository root and test folders are on sys.path during pytest)."""


def new_file_problem(path: str) -> str | None:
    """Why a file the agent created is not a plain module the check may import, or None."""
    p = PurePosixPath(path)
    if p.suffix != ".py":
        return "a new file that is not a Python module"
    for part in p.parts:
        if part == "__pycache__" or part.startswith("."):
            return "a new cache or hidden file"
        stem = part[:-3] if part.endswith(".py") else part
        if stem in SHADOW_NAMES:
            return f"a new module named `{stem}` would shadow an installed module"
        if not stem.isidentifier():
            return f"`{part}` is not an importable module name"
    return None


def _glob_regex(glob: str) -> re.Pattern[str]:
    out, i = "", 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif glob.startswith("**", i):
            out, i = out + ".*", i + 2
        elif glob[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif glob[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(glob[i]), i + 1
    return re.compile(out + r"\Z")


def path_allowed(path: str, rules: EditRules) -> bool:
    """Whether `rules.files` lets the agent change `path` (test files never)."""
    return not is_test_path(path) and any(_glob_regex(g).match(path) for g in rules.files)


def _file_findings(path: str, original: str | None, rules: EditRules) -> list[Violation]:
    if not path_allowed(path, rules):
        why = ("a test or test-configuration file: the hidden check runs its own tests and pytest "
               "configuration, so a change to it is never judged") if is_test_path(path) else \
            f"not among the files this task lets you change ({', '.join(rules.files)})"
        return [Violation("files", path, 0, f"{path} is {why}; change the task's source files only")]
    if original is None and (why := new_file_problem(path)):
        return [Violation("files", path, 0, f"{why}; add code to an existing module or a new plain module")]
    return []


# ---------------------------------------------------------------- judging

def judge_change(path: str, original: str | None, new: str | None, rules: EditRules,
                 repo_modules: Iterable[str] = ()) -> list[Violation]:
    """The ways changing `path` from `original` (None: a new file) to `new` (None: deleted)
    breaks `rules`, leaving out the ones it relaxes. `repo_modules`: top-level modules the
    repository's original non-test sources import (`repo_modules`), which any file may import
    unless they reach the interpreter. A file that does not parse is not judged (it cannot run)."""
    out = _file_findings(path, original, rules)
    if new is not None and path.endswith(".py"):
        mods = repo_modules if isinstance(repo_modules, frozenset) else frozenset(repo_modules)
        out += _code_violations(path, original, new, rules, mods)
    relaxed = set(rules.relax)
    return [v for v in out if v.rule not in relaxed]


def _code_violations(path: str, original: str | None, new: str, rules: EditRules,
                     repo_modules: frozenset[str]) -> list[Violation]:
    tree = _parse(new)
    if tree is None:
        return []
    old_tree = _parse(original) if original is not None else None
    allowed = allowances(old_tree)
    file_imports = {k for r, k in allowed if r == "imports"}
    own = repo_modules.own if isinstance(repo_modules, RepoModules) else frozenset()
    out: list[Violation] = []
    seen: set[tuple[str, str, int]] = set()
    shadowing = frozenset(Names(old_tree).module_bound) if old_tree is not None else frozenset()
    for f in Walker(tree, shadowing).run():
        if (f.rule, f.key) in allowed or (f.rule, f.key, f.line) in seen:
            continue
        if f.rule == "imports":
            why = _import_refusal(f.key, file_imports, rules, repo_modules, own)
            if why is None:
                continue
            f = type(f)(f.rule, f.key, f.line, f"{f.message}: {why}")
        seen.add((f.rule, f.key, f.line))
        out.append(Violation(f.rule, path, f.line, f.message))
    return sorted(out, key=lambda v: (v.line, v.rule))


def _import_refusal(key: str, file_imports: set[str], rules: EditRules, repo_modules: frozenset[str],
                    own: frozenset[str]) -> str | None:
    """Why importing the top-level module `key` (".name": a module named `name` brought in from
    a repository module) is refused, or None when the allow-list has it."""
    through = key.startswith(".")
    name = key.lstrip(".")
    if name in rules.allow_imports or name in file_imports or name in ALWAYS_IMPORTABLE or name in PURE_STDLIB:
        return None
    if through and name in own:
        return None  # the repository's own module of that name
    if name in _STDLIB or name in INTERPRETER_MODULES:
        return ("a standard-library module outside the pure set (math, functools, dataclasses, re, ...: "
                "docs/edit-rules.md) that this file did not import; it reaches the process, files or the "
                "interpreter -- use what the file already imports")
    if name in repo_modules:
        return None
    return "neither this file nor the repository imported it; use what the file already imports"


def judge_changes(changes: dict[str, tuple[str | None, str | None]], rules: EditRules,
                  repo_modules: Iterable[str] = ()) -> list[Violation]:
    """`judge_change` over path -> (original, new) for several files."""
    mods = repo_modules if isinstance(repo_modules, frozenset) else frozenset(repo_modules)
    out = [v for path, (old, new) in sorted(changes.items()) for v in judge_change(path, old, new, rules, mods)]
    if "computed-names" not in rules.relax:
        out += _foreign_name_calls(changes)
    return out


def _foreign_name_calls(changes: dict[str, tuple[str | None, str | None]]) -> list[Violation]:
    """A function whose parameter reaches `getattr` is accepted when the calls in its own file
    give it literals; the other changed files' calls of it must as well."""
    trees = {path: _parse(new) for path, (_, new) in changes.items() if new is not None and path.endswith(".py")}
    takers = {path: Walker(tree).run_name_params() for path, tree in trees.items() if tree is not None}
    out = []
    for path, tree in sorted(trees.items()):
        others = {k: v for p, found in takers.items() if p != path for k, v in found.items()}
        if tree is None or not others:
            continue
        for line in foreign_name_calls(tree, others):
            out.append(Violation("computed-names", path, line, "calls a function of another changed file whose "
                                 "parameter is an attribute name without a literal name (or passes it on); "
                                 "give it the attribute name as a literal"))
    return out


class RepoModules(frozenset):
    """The top-level modules a repository's non-test sources import and its own module names
    (a frozenset of both, as callers always had), with its own names apart in `own`."""

    own: frozenset[str] = frozenset()


def repo_modules(root: Path) -> frozenset[str]:
    """Top-level modules imported by the repository's non-test Python sources under `root`,
    and the names of the repository's own packages and modules (a RepoModules)."""
    out: set[str] = set()
    own: set[str] = set()
    for p in root.rglob("*.py"):
        rel = p.relative_to(root).as_posix()
        if ".git" in p.parts or not p.is_file() or p.is_symlink():
            continue
        if is_test_path(rel):
            continue
        # the repository's own modules and packages, at any depth (src/ layouts included)
        names = (part.removesuffix(".py") for part in p.relative_to(root).parts)
        own.update(n for n in names if n.isidentifier() and not (n.startswith("__") and n.endswith("__")))
        try:
            tree = _parse(p.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Import):
                out.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                out.add(node.module.split(".")[0])
    made = RepoModules(out | own)
    made.own = frozenset(own)
    return made


@functools.lru_cache(maxsize=64)
def _dir_modules(root: Path) -> frozenset[str]:
    return repo_modules(root)


def tree_changes(before: Path, after: Path) -> dict[str, tuple[str | None, str | None]]:
    """path -> (text in `before` or None, text in `after` or None) for every regular file that
    differs between two repository trees (e.g. the buggy state and the reference fix)."""
    def files(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
                if p.is_file() and not p.is_symlink() and ".git" not in p.relative_to(root).parts}

    old, new = files(before), files(after)
    out = {}
    for path in sorted(set(old) | set(new)):
        if old.get(path) != new.get(path):
            out[path] = tuple(None if t is None else t.decode("utf-8", "replace")
                              for t in (old.get(path), new.get(path)))
    return out


def relax_hint(violations: list[Violation]) -> str:
    names = sorted({v.rule for v in violations}, key=RULE_NAMES.index)
    return f"(if the fix really needs it, relax it in the task file: `rules: {{relax: [{', '.join(names)}]}}`)"


# ---------------------------------------------------------------- per task

@dataclass(frozen=True)
class TaskRules:
    """A task's edit rules with what judging needs, made once per task: the buggy tree (the
    originals) and the modules its non-test sources import."""

    rules: EditRules
    root: Path
    """The task's buggy repository (un-renamed), cached for the process (tasks.format.materialize)."""
    modules: frozenset[str]

    def original(self, path: str) -> str | None:
        if not safe_path(path):  # never read outside the tree
            return None
        p = self.root / path
        if not p.is_file() or p.is_symlink():
            return None
        return p.read_text(encoding="utf-8", errors="replace")

    def judge(self, path: str, new: str | None) -> list[Violation]:
        """Violations of changing `path` (original names) from its buggy text to `new`."""
        return judge_change(path, self.original(path), new, self.rules, self.modules)

    @functools.cached_property
    def frame_readers(self) -> dict[str, frozenset[str]]:
        """The buggy tree's files that read frames themselves (tasks.check.guard.frame_readers):
        scanned once per task, not at every check."""
        return frame_readers(self.root)


_TASKS: dict[int, TaskRules] = {}
_TASKS_LOCK = threading.Lock()


def for_task(task: Task) -> TaskRules:
    """The TaskRules of `task` (made once per Task object and process)."""
    with _TASKS_LOCK:
        hit = _TASKS.get(id(task))
    if hit is not None:
        return hit
    root = cached_tree(task, "buggy")
    clean = repo_path(task)
    # A plain repository directory is shared by a suite's tasks: its modules are read once.
    modules = _dir_modules(clean.resolve()) if not isinstance(task.repo, GitRepo) and clean.is_dir() \
        else repo_modules(root)
    made = TaskRules(task.rules, root, modules)
    with _TASKS_LOCK:
        if id(task) not in _TASKS:
            _TASKS[id(task)] = made
            weakref.finalize(task, _TASKS.pop, id(task), None)
        return _TASKS[id(task)]


def reference_violations(task: Task) -> list[Violation]:
    """How the task's reference fix (on the buggy tree) breaks its edit rules, those it relaxes
    left out; [] for tasks without a fix. No sandbox: the fix patch is applied on the host, to
    a copy of the files it touches."""
    if task.kind != "fix" or not task.fix:
        return []
    ctx = for_task(task)
    fix = field_text(task, task.fix)
    with tempfile.TemporaryDirectory(prefix="fixrl-rules-") as tmp:
        before, after = Path(tmp) / "before", Path(tmp) / "after"
        for rel in changed_paths(fix):
            src = ctx.root / rel
            if src.is_file() and not src.is_symlink() and safe_path(rel):
                for dest in (before / rel, after / rel):
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dest)
        after.mkdir(exist_ok=True)
        before.mkdir(exist_ok=True)
        try:
            apply_patch(after, fix, "fix patch to the buggy repository")
            changes = tree_changes(before, after)
        except ValueError:  # a patch that needs more of the tree (a rename, a mode change): all of it
            fixed = materialize(task, Path(tmp) / "fixed", "fixed")
            changes = tree_changes(ctx.root, fixed)
    return judge_changes(changes, task.rules, ctx.modules)


def safe_path(rel: str) -> bool:
    p = PurePosixPath(rel)
    return bool(rel) and not p.is_absolute() and ".." not in p.parts

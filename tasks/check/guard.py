"""What the check's runtime guard allows each changed file to do (host side).

The runtime guard (`sandbox/inside/check`, inside the check's interpreter) treats as tampering
an interpreter-level operation -- reaching frames, code objects, the heap, ctypes, process
creation, tracing, signal handlers, generated code -- made while code from a file the agent
changed or added is on the call stack, unless that file's ORIGINAL (or the task's reference
fix of it) already names that kind of operation. This module computes those allowances from
the files' text: `categories(text)` reads the AST for the modules and names each category is
made of, so a file that already spawns processes may keep doing so, and code that builds
the name at run time (`getattr(sys, "_get" + "frame")`) is caught by the guard because its
text names nothing.

It is deliberately small and separate from the static edit rules (tasks.check.rules): those refuse
changes before anything runs; this one only says which runtime events a changed file's
history makes ordinary. What it does not do: judge whether a change is acceptable.
"""
from __future__ import annotations

import ast
import functools
import textwrap
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

CATEGORIES = ("process", "frames", "code", "heap", "ctypes", "trace", "signals", "threads", "exec", "dunders",
              "mocks")
"""Kinds of runtime operation the guard attributes to changed code (the runner's
`check.rules` maps audit events onto them). Opening test files, the runner's own files and adding audit
hooks are never allowed, whatever a file used before."""

# A category is "used" by a file whose AST imports one of its modules or names one of its
# identifiers (as a name, an attribute or a string constant).
_MODULES = {
    "process": {"subprocess", "pty", "multiprocessing", "pexpect", "sh", "plumbum"},
    "frames": {"inspect", "traceback", "bdb", "pdb"},
    "code": {"inspect", "dis", "types", "marshal"},
    "heap": {"gc", "objgraph", "guppy", "pympler"},
    "ctypes": {"ctypes", "_ctypes", "cffi"},
    "trace": {"bdb", "pdb", "trace", "cProfile", "profile", "coverage"},
    "signals": {"signal"},
    "threads": {"threading", "_thread", "concurrent", "multiprocessing", "asyncio", "queue"},
    "exec": {"runpy", "code", "codeop", "importlib", "marshal", "dataclasses", "attr", "attrs", "jinja2",
             "types", "timeit", "doctest"},
    "dunders": {"dataclasses", "attr", "attrs", "functools", "enum", "numbers", "decimal", "fractions"},
    "mocks": {"mock", "pytest_mock"},
}
_NAMES = {
    "process": {"system", "popen", "fork", "forkpty", "execv", "execve", "execvp", "execvpe", "execl",
                "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnle",
                "spawnlp", "spawnlpe", "posix_spawn", "posix_spawnp", "kill", "killpg", "create_subprocess_exec",
                "create_subprocess_shell", "Popen"},
    "frames": {"_getframe", "_current_frames", "_current_exceptions", "currentframe", "tb_frame", "gi_frame",
               "cr_frame", "ag_frame", "f_back", "walk_stack", "walk_tb"},
    "code": {"__code__", "f_code", "gi_code", "cr_code", "ag_code", "co_consts", "co_code", "CodeType",
             "FunctionType"},
    "heap": {"get_objects", "get_referrers", "get_referents"},
    "ctypes": {"CDLL", "cdll", "pythonapi", "c_void_p", "addressof"},
    "trace": {"settrace", "setprofile", "gettrace"},
    "signals": {"SIGALRM", "setitimer", "alarm"},
    "threads": {"Thread", "Timer", "start_new_thread", "ThreadPoolExecutor", "ProcessPoolExecutor"},
    "exec": {"dataclass", "namedtuple", "NamedTuple", "make_dataclass", "FunctionType", "CodeType",
             "import_module", "reload"},
    # Dunders that decide what a value compares, hashes or converts to (the runner's `check.values`
    # _VALUE_DUNDERS), and what generates them.
    "dunders": {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__", "__len__",
                "__contains__", "__iter__", "__getitem__", "__float__", "__int__", "__index__", "__complex__",
                "__abs__", "__round__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
                "__truediv__", "__rtruediv__", "__instancecheck__", "__subclasscheck__", "__getattr__",
                "__getattribute__", "__class__", "dataclass", "total_ordering", "NamedTuple", "namedtuple"},
    "mocks": {"mock", "Mock", "MagicMock", "ANY", "patch"},
}
# Builtins count only as plain names (`re.compile` is not `compile`).
_BUILTINS = {"exec": {"exec", "eval", "compile", "__import__"}}


_PARSE_LOCK = threading.Lock()
"""CPython 3.11's parser keeps its AST recursion depth in shared state: parsing in several
threads at once can fail with "AST constructor recursion depth mismatch" (episodes finish in
threads)."""


def categories(text: str) -> frozenset[str]:
    """The guard categories a Python file's text uses (all of them when it does not parse:
    the guard must never reject a fix because its original was not readable Python)."""
    return _categories(text)


@functools.lru_cache(maxsize=4096)
def _categories(text: str) -> frozenset[str]:
    try:
        with _PARSE_LOCK:
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return frozenset(CATEGORIES)
    modules: set[str] = set()
    names: set[str] = set()
    builtins: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.name.split(".")[0] for a in node.names)
            names.update(part for a in node.names for part in a.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            modules.add((node.module or "").split(".")[0])
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name):
            names.add(node.id)
            builtins.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)
    return frozenset(c for c in CATEGORIES
                     if modules & _MODULES[c] or names & _NAMES[c] or builtins & _BUILTINS.get(c, set()))


@dataclass(frozen=True)
class GuardSpec:
    """The changed files of a repository state to judge, and what each may do at run time."""

    changed: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Repository-relative path of each file the agent changed or added -> the categories its
    original or the reference fix uses (CATEGORIES)."""
    own: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Unchanged repository files that read frames themselves -> {"frames"}: the guard lets
    them do so when changed code calls them (the runner's `check.core._attribute`)."""
    originals: Mapping[str, Mapping[str, Mapping[str, str]]] = field(default_factory=dict)
    """Repository-relative path of each changed file that existed -> class qualname -> the
    source of each comparison method (`__eq__`, `__ne__`, `__contains__`) the ORIGINAL class
    defined: the snapshot the hidden tests' comparisons use for the repository's own objects
    (`original_comparisons`; the runner's `check.equal`). Every original class is here ({}: it
    defined none); a class absent here is one the agent added."""

    def to_wire(self) -> dict[str, list[str]]:
        """The form the sandboxed runner reads (JSON)."""
        return {path: sorted(cats) for path, cats in sorted(self.changed.items())}

    def own_wire(self) -> dict[str, list[str]]:
        return {path: sorted(cats) for path, cats in sorted(self.own.items())}

    def originals_wire(self) -> dict[str, dict[str, dict[str, str]]]:
        return {path: {q: dict(m) for q, m in classes.items()} for path, classes in sorted(self.originals.items())}


_COMPARISON_METHODS = ("__eq__", "__ne__", "__contains__")


def original_comparisons(text: str) -> dict[str, dict[str, str]]:
    """Class qualname -> {method name: its source, dedented} for every class of this Python
    source (nested classes included), each with the comparison methods it defines by a `def` in
    its body ({}: none; such a class compares by what its bases originally defined); {} when the
    source defines no class or does not parse."""
    if "class" not in text:
        return {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, dict[str, str]] = {}
    todo: list[tuple[str, ast.AST]] = [("", tree)]
    while todo:
        prefix, node = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                qual = prefix + child.name
                out.setdefault(qual, {})
                for item in child.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in _COMPARISON_METHODS:
                        source = ast.get_source_segment(text, item, padded=True)
                        if source is not None:
                            out.setdefault(qual, {})[item.name] = textwrap.dedent(source)
                todo.append((qual + ".", child))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                todo.append((prefix + child.name + ".<locals>.", child))
    return out


_FRAME_WORDS = tuple(_NAMES["frames"] | _MODULES["frames"])


def frame_readers(root: Path) -> dict[str, frozenset[str]]:
    """The Python files under `root` (repository-relative) whose text reads frames; a
    substring test first, so that only a few files are parsed."""
    out = {}
    for p in root.rglob("*.py"):
        rel = p.relative_to(root).as_posix()
        if not p.is_file() or p.is_symlink():
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        if any(word in text for word in _FRAME_WORDS) and "frames" in categories(text):
            out[rel] = frozenset({"frames"})
    return out


def spec_for(changes: Mapping[str, tuple[str | None, str | None]],
             readers: Mapping[str, frozenset[str]] | None = None) -> GuardSpec:
    """GuardSpec for changed Python files: path -> (original text or None for a new file,
    the reference fix's text of that file or None). A file's allowances are what its
    original and the reference fix use; a new file has only the reference fix's. `readers`:
    `frame_readers` of the buggy repository (the same for every state of a task, so callers
    compute it once); the changed files among them are left out."""
    changed, originals = {}, {}
    for path, (original, reference) in changes.items():
        if not path.endswith(".py"):
            continue
        cats = categories(original) if original is not None else frozenset()
        if reference is not None:
            cats |= categories(reference)
        changed[path] = cats
        snapshot = original_comparisons(original) if original is not None else {}
        if snapshot:
            originals[path] = snapshot
    return GuardSpec(changed, {p: c for p, c in (readers or {}).items() if p not in changes}, originals)


def _sources(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8", errors="replace")
            for p in root.rglob("*.py") if p.is_file() and not p.is_symlink()}


def python_changes(before: Path, after: Path) -> dict[str, tuple[str | None, str]]:
    """Path -> (text in `before` or None, text in `after`) of the Python files that differ
    from `before` to `after` (two repository trees on the host); files `after` lacks are left out."""
    old, new = _sources(before), _sources(after)
    return {path: (old.get(path), text) for path, text in new.items() if old.get(path) != text}


def spec_between(before: Path, after: Path) -> GuardSpec:
    """GuardSpec for the Python files that differ from `before` to `after` (two repository
    trees on the host, e.g. the buggy state and the reference fix): each may do what its text
    in either tree names."""
    return spec_for(python_changes(before, after), frame_readers(before))

"""The edit rules: what the agent may change, judged on the AST before anything runs.

`judge_change(path, original, new, rules, repo_modules)` compares the AST of a changed file with
the AST of its original (None: a new file) and returns the `Violation`s of the task's
`EditRules` (tasks.format.schema). Whatever the original file already does is allowed: a file that
spawns processes may keep doing so, a class module that defines `__eq__` may gain another one.
The rules (a task or suite may `relax` any of them in its own file):

- files: only files matching `rules.files` (default every Python file), never a test file; a
  new file only as a plain module that shadows no installed one (`new_file_problem`).
- imports: no module that neither the file nor the repository's non-test sources imported
  (`repo_modules`), and none of INTERPRETER_MODULES (sys, inspect, ctypes, gc, os, ...) unless
  the file itself imported it.
- introspection: no attribute, name, subscript key or string naming interpreter state (frames,
  code objects, `modules`, `_getframe`, ...) or any dunder the original did not use.
- computed-names: getattr/setattr/delattr/hasattr (and operator.attrgetter/methodcaller) only
  with a literal name, no vars()/globals()/locals()/dir(), and none of them passed around as a
  value (`g = getattr`) -- unless the original did the same.
- exec: no exec/eval/compile/__import__/open/breakpoint/exit/quit/input, no os/posix/sys
  process, signal, file or environment calls, unless the original made the same one.
- comparison-dunders: no `__eq__`-like dunder (COMPARISON_DUNDERS) defined, assigned or named,
  no class built by `type(name, bases, dict)` and no `functools.total_ordering`, unless the
  original file defines such dunders.

Names are resolved through imports (`import os as o; o.system`) and simple aliases; names built
at run time are refused because the calls that would use them need a literal. What it cannot
see (the check's runtime guard stands behind it): behaviour that needs none of these names --
an existing object of the repository with a permissive `__eq__`, code that works out the
expected answer from the public tests' data, a deliberately slow or memory-hungry fix, and
files the code opens through a module the original already used for files.
"""
from __future__ import annotations

import ast
import functools
import re
import shutil
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable, Iterator

from fixrl.tasks.check.guard import frame_readers
from fixrl.tasks.format.loader import field_text, repo_path
from fixrl.tasks.format.materialize import apply_patch, cached_tree, changed_paths, is_test_path, materialize
from fixrl.tasks.format.schema import RULE_NAMES, EditRules, GitRepo, Task

# Modules that reach the interpreter, the process or the filesystem: a changed file may import
# one only if its original did (the repository importing one elsewhere is not enough).
INTERPRETER_MODULES = frozenset({
    "ctypes", "_ctypes", "cffi", "gc", "inspect", "linecache", "sys", "importlib", "imp", "builtins",
    "__builtin__", "types", "traceback", "marshal", "dis", "runpy", "code", "codeop", "pickle", "_pickle",
    "cPickle", "dill", "cloudpickle", "shelve", "copyreg", "signal", "subprocess", "os", "posix", "nt",
    "pty", "threading", "_thread", "multiprocessing", "concurrent", "asyncio", "atexit", "faulthandler",
    "tracemalloc", "sysconfig", "site", "sitecustomize", "pytest", "_pytest", "pluggy", "unittest", "mock",
    "pdb", "bdb", "trace", "cProfile", "profile", "socket", "shutil", "tempfile", "glob", "io", "pathlib",
    "fcntl", "resource", "mmap", "_io", "_imp", "_frozen_importlib", "_frozen_importlib_external",
    "_signal", "_posixsubprocess", "_weakref", "zipimport", "pkgutil", "ast", "tokenize", "_ast",
})

# Attribute names (and string keys) that reach interpreter state whatever object they are on.
INTERPRETER_NAMES = frozenset({
    "f_back", "f_globals", "f_locals", "f_code", "f_builtins", "f_trace", "f_lineno", "f_lasti",
    "tb_frame", "tb_next", "tb_lineno", "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code",
    "modules", "_getframe", "_current_frames", "_current_exceptions", "currentframe", "getframeinfo",
    "meta_path", "path_hooks", "path_importer_cache", "settrace", "setprofile", "gettrace", "addaudithook",
    "cell_contents", "mro", "get_objects", "get_referrers", "get_referents", "pythonapi",
})
CODE_PREFIX = "co_"

# Dunders that say nothing about the interpreter: a fix may add them anywhere.
BENIGN_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__module__", "__init__", "__repr__",
                            "__str__", "__all__", "__version__", "__slots__", "__future__"})

COMPARISON_DUNDERS = frozenset({
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__", "__len__",
    "__contains__", "__instancecheck__", "__subclasscheck__", "__getattr__", "__getattribute__",
    "__class_getitem__", "__index__", "__int__", "__float__", "__nonzero__", "__cmp__",
})
_COMPARISON_MAKERS = frozenset({"functools.total_ordering", "total_ordering"})

# Calls whose argument at the index is an attribute name (None: every argument).
NAME_TAKERS = {"getattr": 1, "setattr": 1, "delattr": 1, "hasattr": 1, "operator.attrgetter": None,
               "operator.methodcaller": 0, "inspect.getattr_static": 1}
NAME_TABLES = frozenset({"vars", "globals", "locals", "dir"})

DANGEROUS_BUILTINS = frozenset({"exec", "eval", "compile", "__import__", "open", "breakpoint", "exit", "quit",
                                "SystemExit", "KeyboardInterrupt"})
ALWAYS_IMPORTABLE = frozenset({"__future__"})

# Modules that other modules hold as attributes (`typing.sys`, `random._os`): reaching one that
# way is an import in disguise.
_MODULE_ATTRS = frozenset(n for m in ("sys", "os", "posix", "nt", "builtins", "subprocess", "ctypes", "gc", "inspect",
                                      "linecache", "importlib", "signal", "marshal", "runpy", "pty", "thread",
                                      "threading", "atexit", "faulthandler", "traceback", "pickle", "shutil",
                                      "socket", "tempfile", "multiprocessing", "imp", "io", "weakref")
                          for n in (m, "_" + m) if n not in ("io", "thread", "weakref"))
_PROCESS_MODULES = ("os", "posix", "nt", "sys", "signal", "importlib", "io", "_io", "builtins")
_PROCESS_CALLS = re.compile(
    r"^(os|posix|nt)\.(system|popen|fork|forkpty|exec\w*|spawn\w*|posix_spawn\w*|kill|killpg|_exit|abort|"
    r"environ\w*|putenv|unsetenv|getenv\w*|remove|unlink|rmdir|removedirs|rename|renames|replace|chmod|"
    r"lchmod|chown|lchown|open|openpty|fdopen|write|writev|pwrite|read|pread|dup|dup2|close|closerange|pipe|"
    r"pipe2|mkfifo|mknod|symlink|link|truncate|ftruncate|listdir|scandir|walk|fwalk|chdir|fchdir|setsid|"
    r"setpgid|sys|wait\w*|register_at_fork|memfd_create|sendfile|utime|makedirs|mkdir)$"
    r"|^sys\.(exit|modules|_getframe|settrace|setprofile|stdout|stderr|stdin|argv|orig_argv|excepthook|"
    r"displayhook|addaudithook|meta_path|path|path_hooks|setrecursionlimit|__stdout__|__stderr__)$"
    r"|^signal\.\w+$|^importlib\.\w+$|^io\.(open|FileIO|open_code)$|^builtins\.\w+$")


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


@dataclass(frozen=True)
class _Finding:
    rule: str
    key: str
    """What the original must also contain for the finding to be allowed."""
    line: int
    message: str


_PARSE_LOCK = threading.Lock()  # CPython 3.11's parser is not safe in several threads at once


def _parse(text: str) -> ast.Module | None:
    try:
        with _PARSE_LOCK:
            return ast.parse(text)
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
        why = "a test or test-configuration file" if is_test_path(path) else \
            f"not among the files this task lets you change ({', '.join(rules.files)})"
        return [Violation("files", path, 0, f"{path} is {why}; change the task's source files only")]
    if original is None and (why := new_file_problem(path)):
        return [Violation("files", path, 0, f"{why}; add code to an existing module or a new plain module")]
    return []


# ---------------------------------------------------------------- names

def _dotted(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ['a', 'b', 'c'] (None when the chain does not start at a name)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


class _Names:
    """Flow-insensitive aliases of one module: import bindings (`import os as o`, `from os
    import system`) and plain assignments of a name or attribute chain (`g = getattr`)."""

    def __init__(self, tree: ast.Module):
        self.alias: dict[str, str] = {}
        self.module_bound: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.alias[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.alias[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in tree.body:  # names the module itself defines shadow builtins everywhere
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.module_bound.add(node.name)
            elif isinstance(node, ast.Assign):
                self.module_bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for _ in range(3):  # chains of plain assignments: a = getattr; b = a
            for node in ast.walk(tree):
                for target, value in _pairs(node):
                    chain = _dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
                    if isinstance(target, ast.Name) and chain:
                        canon = self.canonical_chain(chain)
                        if canon != target.id:
                            self.alias.setdefault(target.id, canon)

    def canonical_chain(self, chain: list[str]) -> str:
        head = self.alias.get(chain[0], chain[0])
        if head.startswith(("builtins.", "__builtin__.")):
            head = head.split(".", 1)[1]
        return ".".join([head, *chain[1:]])

    def canonical(self, node: ast.AST) -> str | None:
        chain = _dotted(node)
        return self.canonical_chain(chain) if chain else None


def _pairs(node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs a statement or walrus binds."""
    if isinstance(node, ast.Assign):
        for t in node.targets:
            if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(t.elts) == len(node.value.elts):
                yield from zip(t.elts, node.value.elts)
            else:
                yield t, node.value
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        yield node.target, node.value
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        positional = args.posonlyargs + args.args
        for a, d in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            yield ast.Name(a.arg), d
        for a, d in zip(args.kwonlyargs, args.kw_defaults):
            if d is not None:
                yield ast.Name(a.arg), d


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


_CODE_ATTRS = frozenset(n for n in dir((lambda: 0).__code__) if n.startswith(CODE_PREFIX))


def _interpreter_name(name: str) -> bool:
    return name in INTERPRETER_NAMES or name in _CODE_ATTRS


def _docstrings(tree: ast.Module) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


# ---------------------------------------------------------------- findings

def _name_finding(name: str, line: int, how: str, defining: bool = False) -> _Finding | None:
    """A finding for an identifier that reaches the interpreter (or, `defining`, that a class
    gains as a method or attribute), or None."""
    if name in COMPARISON_DUNDERS and defining:
        return _Finding("comparison-dunders", "<defines>", line,
                        f"{how} `{name}`, which decides how a value compares, hashes, converts or finds "
                        "attributes; keep the classes' existing behaviour (fix the function that computes the value)")
    if _is_dunder(name) and name not in BENIGN_DUNDERS:
        return _Finding("introspection", name, line, f"{how} `{name}`, a dunder this file did not use; "
                        "use the object's ordinary attributes and functions")
    if _interpreter_name(name):
        return _Finding("introspection", name, line, f"{how} `{name}`, which reaches interpreter state "
                        "(frames, code, loaded modules); fix the code's logic instead")
    return None


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _string_findings(value: str, line: int) -> Iterator[_Finding]:
    """A string that names interpreter state: exactly the name, a dunder inside it, a dotted or
    format-field path through one (`"{0.__class__}".format`, `attrgetter("a.f_back")`)."""
    if value.isidentifier():
        f = _name_finding(value, line, "a string naming", defining=True)
        if f:
            yield f
        return
    tokens = set(_TOKEN.findall(value)) if len(value) < 10_000 else set()
    for tok in sorted(tokens):
        if _is_dunder(tok) or (_interpreter_name(tok) and re.search(rf"[.\[]{re.escape(tok)}\b", value)):
            f = _name_finding(tok, line, "a string containing", defining=True)
            if f:
                yield f
    m = _FORMAT_PATH.search(value)
    if m:
        yield _Finding("introspection", "<format-path>", line,
                       f"a format string reaching attributes or items (`{m.group(0)}`); format plain values")


_FORMAT_PATH = re.compile(r"\{\w*[.\[]")


class _Walker:
    """Every finding of one module's AST."""

    def __init__(self, tree: ast.Module, shadowing: frozenset[str] | None = None):
        self.tree = tree
        self.names = _Names(tree)
        if shadowing is not None:
            # Only a name the original module already defined for itself (its own `compile`)
            # shadows a builtin: a new top-level `exec = exec` must not hide the calls after it.
            self.names.module_bound &= shadowing
        self.docstrings = _docstrings(tree)
        self.found: list[_Finding] = []
        self.called: set[int] = set()

    def run(self) -> list[_Finding]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self.called.add(id(node.func))
        for node in ast.walk(self.tree):
            self._node(node)
        return self.found

    def add(self, f: _Finding | None) -> None:
        if f is not None:
            self.found.append(f)

    def _node(self, node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self._import(node, line)
        elif isinstance(node, ast.Attribute):
            store = isinstance(node.ctx, ast.Store)
            self.add(_name_finding(node.attr, line, "assigns the attribute" if store else "the attribute", store))
            if node.attr in _MODULE_ATTRS:
                self.add(_Finding("introspection", node.attr, line, f"the attribute `{node.attr}` reaches a module "
                                  "the file did not import; use what the file already imports"))
            self._reference(node, line)
        elif isinstance(node, ast.MatchClass):
            for name in node.kwd_attrs:
                self.add(_name_finding(name, line, "a class pattern reading"))
        elif isinstance(node, ast.Name):
            if node.id not in DANGEROUS_BUILTINS:  # those are the exec rule's
                self.add(_name_finding(node.id, line, "the name", isinstance(node.ctx, ast.Store)))
            self._reference(node, line)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in self.docstrings:
            for f in _string_findings(node.value, line):
                self.add(f)
        elif isinstance(node, ast.Call):
            self._call(node, line)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._definition(node, line)
        elif isinstance(node, ast.keyword) and node.arg:
            self.add(_name_finding(node.arg, line, "the keyword", defining=True))

    def _import(self, node: ast.Import | ast.ImportFrom, line: int) -> None:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                return  # the repository's own modules
            mods = [node.module or ""]
            for a in node.names:
                if a.name == "*" and (node.module or "").split(".")[0] in INTERPRETER_MODULES:
                    self.add(_Finding("exec", f"{node.module}.*", line, f"`from {node.module} import *` "
                                      "brings in unnamed process, file or interpreter calls; import names one by one"))
                self.add(_name_finding(a.name, line, f"importing from {node.module}"))
                canon = f"{node.module}.{a.name}"
                if _PROCESS_CALLS.match(canon) or a.name in DANGEROUS_BUILTINS and node.module == "builtins":
                    self.add(_Finding("exec", canon, line, f"imports `{canon}`, a process, file or code call"))
        else:
            mods = [a.name for a in node.names]
        for mod in mods:
            top = mod.split(".")[0]
            self.found.append(_Finding("imports", top, line, f"imports `{mod}`"))

    def _reference(self, node: ast.Name | ast.Attribute, line: int) -> None:
        canon = self.names.canonical(node)
        if canon is None:
            return
        head = canon.split(".")[0]
        if isinstance(node, ast.Name) and node.id in self.names.module_bound and node.id not in self.names.alias:
            return  # the module's own function or class of that name
        if canon in DANGEROUS_BUILTINS or (head in _PROCESS_MODULES and _PROCESS_CALLS.match(canon)):
            self.add(_Finding("exec", canon, line, f"`{canon}` runs code, exits, or touches processes, files "
                              "or the environment; a bug fix changes the logic only"))
        taker = canon if canon in NAME_TAKERS or canon in NAME_TABLES else None
        if taker and id(node) not in self.called:
            self.add(_Finding("computed-names", taker, line, f"`{taker}` used as a value (aliased or passed "
                              "on); call it directly with a literal attribute name"))
        if canon in _COMPARISON_MAKERS:
            self.add(_Finding("comparison-dunders", "<defines>", line, f"`{canon}` generates comparison "
                              "methods; keep the classes' existing comparison behaviour"))

    def _call(self, node: ast.Call, line: int) -> None:
        canon = self.names.canonical(node.func)
        if canon in NAME_TABLES:
            self.add(_Finding("computed-names", canon, line, f"`{canon}()` exposes a namespace by computed "
                              "keys; use the names directly"))
            return
        if canon in NAME_TAKERS:
            index = NAME_TAKERS[canon]
            args = node.args if index is None else node.args[index:index + 1]
            computed = any(isinstance(a, ast.Starred) for a in node.args) or node.keywords or \
                (index is not None and len(node.args) <= index) or \
                any(not (isinstance(a, ast.Constant) and isinstance(a.value, str)) for a in args)
            if computed:
                self.add(_Finding("computed-names", canon, line, f"`{canon}` with a name computed at run time; "
                                  "write the attribute name as a literal (or access it directly)"))
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "format_map", "vformat") and not (
                isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)):
            self.add(_Finding("computed-names", "<format-computed>", line, "`.format` on a string built at run "
                              "time can reach attributes; format a literal string or use an f-string"))
        if canon == "type" and len(node.args) == 3:
            self.add(_Finding("comparison-dunders", "<defines>", line, "`type(name, bases, namespace)` builds a "
                              "class whose methods are not written out; define a plain class"))

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, line: int) -> None:
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                for target, _ in _pairs(stmt):
                    if isinstance(target, ast.Name):
                        self.add(_name_finding(target.id, getattr(stmt, "lineno", line), "a class attribute",
                                               defining=True))
            return
        self.add(_name_finding(node.name, line, "defines", defining=True))


def _allowances(tree: ast.Module | None) -> set[tuple[str, str]]:
    """(rule, key) of everything the original does, and every identifier it mentions."""
    if tree is None:
        return set()
    out = {(f.rule, f.key) for f in _Walker(tree).run()}
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else \
            node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
            node.value.isidentifier() else getattr(node, "name", None)
        if isinstance(name, str):
            out.add(("introspection", name))
    return out


# ---------------------------------------------------------------- judging

def judge_change(path: str, original: str | None, new: str | None, rules: EditRules,
                 repo_modules: Iterable[str] = ()) -> list[Violation]:
    """The ways changing `path` from `original` (None: a new file) to `new` (None: deleted)
    breaks `rules`, leaving out the ones it relaxes. `repo_modules`: top-level modules the
    repository's original non-test sources import (`repo_modules`), which any file may import
    unless they reach the interpreter. A file that does not parse is not judged (it cannot run)."""
    out = _file_findings(path, original, rules)
    if new is not None and path.endswith(".py"):
        out += _code_violations(path, original, new, rules, frozenset(repo_modules))
    relaxed = set(rules.relax)
    return [v for v in out if v.rule not in relaxed]


def _code_violations(path: str, original: str | None, new: str, rules: EditRules,
                     repo_modules: frozenset[str]) -> list[Violation]:
    tree = _parse(new)
    if tree is None:
        return []
    old_tree = _parse(original) if original is not None else None
    allowed = _allowances(old_tree)
    file_imports = {k for r, k in allowed if r == "imports"}
    out: list[Violation] = []
    seen: set[tuple[str, str, int]] = set()
    shadowing = frozenset(_Names(old_tree).module_bound) if old_tree is not None else frozenset()
    for f in _Walker(tree, shadowing).run():
        if (f.rule, f.key) in allowed or (f.rule, f.key, f.line) in seen:
            continue
        if f.rule == "imports":
            if f.key in rules.allow_imports or f.key in file_imports or f.key in ALWAYS_IMPORTABLE:
                continue
            if f.key in repo_modules and f.key not in INTERPRETER_MODULES:
                continue
            why = ("reaches the interpreter, the process or the filesystem" if f.key in INTERPRETER_MODULES
                   else "neither this file nor the repository imported it")
            f = _Finding(f.rule, f.key, f.line, f"{f.message}: {why}; use what the file already imports")
        seen.add((f.rule, f.key, f.line))
        out.append(Violation(f.rule, path, f.line, f.message))
    return sorted(out, key=lambda v: (v.line, v.rule))


def judge_changes(changes: dict[str, tuple[str | None, str | None]], rules: EditRules,
                  repo_modules: Iterable[str] = ()) -> list[Violation]:
    """`judge_change` over path -> (original, new) for several files."""
    mods = frozenset(repo_modules)
    return [v for path, (old, new) in sorted(changes.items()) for v in judge_change(path, old, new, rules, mods)]


def repo_modules(root: Path) -> frozenset[str]:
    """Top-level modules imported by the repository's non-test Python sources under `root`,
    and the names of the repository's own packages and modules."""
    out: set[str] = set()
    for p in root.rglob("*.py"):
        rel = p.relative_to(root).as_posix()
        if ".git" in p.parts or not p.is_file() or p.is_symlink():
            continue
        if is_test_path(rel):
            continue
        # the repository's own modules and packages, at any depth (src/ layouts included)
        names = (part.removesuffix(".py") for part in p.relative_to(root).parts)
        out.update(n for n in names if n.isidentifier() and not _is_dunder(n))
        try:
            tree = _parse(p.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Import):
                out.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                out.add(node.module.split(".")[0])
    return frozenset(out)


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

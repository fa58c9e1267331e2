"""What a changed file's code reaches, read from its AST: the findings the edit rules
(tasks.check.rules) judge against the original file.

`Walker(tree).run()` lists a `Finding` for everything in a module that reaches beyond the
allow-list of tasks.check.allowed: an import, a dunder outside the documented lists, a name that
reaches interpreter state, a call that runs code, exits, touches processes or writes files, a
computed attribute name that could be a dunder, a comparison method. Names are read as the
parser reads them (identifiers are NFKC-normalised by Python itself; string constants are
judged both as written and normalised), and resolved through imports and simple aliases.

Not guaranteed: it is flow-insensitive. A value that reaches a computed `getattr` through a
parameter is accepted when every call of that function in the same file passes a literal name;
the other changed files' calls are checked when the changes are judged together
(`foreign_name_calls`, at submission), matched by the function's name only. Third-party modules
the repository imports are judged by name only.
"""
from __future__ import annotations

import ast
import functools
import re
import sys
import unicodedata
from dataclasses import dataclass
from typing import Iterator

from fixrl.tasks.check.allowed import (
    ATTRIBUTE_DUNDERS,
    PROCESS_NAMES,
    PROTOCOL_DUNDERS,
    PURE_STDLIB,
    REFUSED_MODULE_ATTRS,
)

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
    "_getframe", "_current_frames", "_current_exceptions", "currentframe", "getframeinfo",
    "meta_path", "path_hooks", "path_importer_cache", "settrace", "setprofile", "gettrace", "addaudithook",
    "cell_contents", "get_objects", "get_referrers", "get_referents", "pythonapi",
})
"""`modules` and `mro` are not here: `sys.modules` needs `sys` (refused), and `mro()` returns what
`type(x)` already reaches; an agent's own object may have attributes of those names."""
CODE_PREFIX = "co_"

# Dunders that say nothing about the interpreter: a fix may add them anywhere (tasks.check.allowed).
BENIGN_DUNDERS = ATTRIBUTE_DUNDERS

# Methods that decide what a value equals or contains, or answer any attribute: an object with one
# of them written by the agent could be equal to every expected value.
COMPARISON_DUNDERS = frozenset({
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__", "__instancecheck__",
    "__subclasscheck__", "__getattr__", "__getattribute__", "__class_getitem__", "__nonzero__", "__cmp__",
})
_STDLIB = frozenset(sys.stdlib_module_names)
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
class Finding:
    """One thing a module does that the rules judge."""

    rule: str
    key: str
    """What the original must also contain for the finding to be allowed."""
    line: int
    message: str



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


class Names:
    """Flow-insensitive aliases of one module: import bindings (`import os as o`, `from os
    import system`) and plain assignments of a name or attribute chain (`g = getattr`)."""

    def __init__(self, tree: ast.Module):
        self.alias: dict[str, str] = {}
        self.module_bound: set[str] = set()
        self.imported: set[str] = set()
        """Names bound to a module by `import` (`import random`, `import os.path` binds `os`)."""
        self.import_bound: set[str] = set()
        """Every name an import statement binds (`from . import helpers` included)."""
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.import_bound.update((a.asname or a.name).split(".")[0] for a in node.names)
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.alias[a.asname] = a.name
                    self.imported.add(a.asname or a.name.split(".")[0])
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

USE, DEFINE, STORE, STRING = "use", "define", "store", "string"
"""How a name occurs: read as an attribute or name; defined as a method or class attribute;
assigned; written as a string (or keyword) that a call may turn into an attribute name."""


def name_finding(name: str, line: int, how: str, kind: str = USE) -> Finding | None:
    """A finding for an identifier that reaches beyond the allow-list, or None."""
    if name in COMPARISON_DUNDERS and kind != USE:
        return Finding("comparison-dunders", "<defines>", line,
                       f"{how} `{name}`, which decides what a value equals, contains or answers for any "
                       "attribute; keep the classes' existing behaviour (fix the function that computes the value)")
    if _is_dunder(name):
        if name in ATTRIBUTE_DUNDERS or (kind == DEFINE and name in PROTOCOL_DUNDERS) or \
                (kind == USE and name == "__class__"):
            return None
        return Finding("introspection", name, line, f"{how} `{name}`, a dunder outside the documented lists "
                       "(docs/edit-rules.md) that this file did not use; use the object's ordinary attributes "
                       "and functions")
    if _interpreter_name(name):
        return Finding("introspection", name, line, f"{how} `{name}`, which reaches interpreter state "
                       "(frames, code, import machinery); fix the code's logic instead")
    return None


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def string_findings(value: str, line: int) -> Iterator[Finding]:
    """A string that names interpreter state as written or NFKC-normalised (what the parser
    would make of it as an identifier): exactly the name, a dunder inside it, a dotted or
    format-field path through one (`"{0.__class__}".format`, `attrgetter("a.f_back")`)."""
    spellings = {value}
    if not value.isascii() and len(value) < 10_000:
        spellings.add(unicodedata.normalize("NFKC", value))
    for text in sorted(spellings):
        if text.isidentifier():
            f = name_finding(text, line, "a string naming", STRING)
            if f:
                yield f
            continue
        tokens = set(_TOKEN.findall(text)) if len(text) < 10_000 else set()
        for tok in sorted(tokens):
            if _is_dunder(tok) or (_interpreter_name(tok) and re.search(rf"[.\[]{re.escape(tok)}\b", text)):
                f = name_finding(tok, line, "a string containing", STRING)
                if f:
                    yield f


def _safe_literal(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and \
        not any(string_findings(node.value, 0))


def _literal_values(node: ast.AST | None) -> bool:
    """Whether a loop over `node` yields only safe string literals."""
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and all(_safe_literal(e) for e in node.elts)


class _Bindings:
    """Where each name of a module is bound, flow-insensitively and across scopes: a name
    counts as literal when every binding gives it a safe string literal (an assignment, or a
    loop over a literal collection or over a name bound only to such collections), and as a
    dataclass field when every binding loops over `dataclasses.fields(...)`."""

    def __init__(self, tree: ast.Module, names: Names):
        self.sites: dict[str, list[object]] = {}
        self.defs: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.methods: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.methods.update(id(s) for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defs.setdefault(node.name, []).append(node)
                args = node.args
                for i, a in enumerate(args.posonlyargs + args.args):
                    self._bind(a.arg, ("param", node, i))
                for a in (*args.kwonlyargs, args.vararg, args.kwarg):
                    if a is not None:
                        self._bind(a.arg, ("param", node, None))
            elif isinstance(node, ast.Lambda):
                for a in ast.walk(node.args):
                    if isinstance(a, ast.arg):
                        self._bind(a.arg, None)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                how = "literal" if _safe_literal(node.value) else "literals" if _literal_values(node.value) else None
                for t in targets:
                    self._target(t, how)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                it = node.iter
                how = "literal" if _literal_values(it) else ("each", it.id) if isinstance(it, ast.Name) else \
                    "field" if isinstance(it, ast.Call) and names.canonical(it.func) == "dataclasses.fields" else None
                self._target(node.target, how)
            elif isinstance(node, (ast.AugAssign, ast.withitem, ast.ExceptHandler, ast.Import, ast.ImportFrom,
                                   ast.Delete, ast.Global, ast.Nonlocal)):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Name):
                        self._bind(sub.id, None)
                for name in getattr(node, "names", None) or ():
                    self._bind(name if isinstance(name, str) else (name.asname or name.name).split(".")[0], None)
                if isinstance(node, ast.ExceptHandler) and node.name:
                    self._bind(node.name, None)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                self._bind(node.name, None)

    def _bind(self, name: str, how: object) -> None:
        self.sites.setdefault(name, []).append(how)

    def _target(self, target: ast.AST, how: object) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id, how)
        else:  # unpacking, attributes, subscripts: the names in it get unknown values
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    self._bind(sub.id, None)

    def literal(self, name: str) -> bool:
        sites = self.sites.get(name)
        return bool(sites) and all(s == "literal" or isinstance(s, tuple) and s[0] == "each" and
                                   self._all(s[1], "literals") for s in sites)

    def field(self, name: str) -> bool:
        """Whether `name` only ever holds a dataclass field (its `.name` is a declared field)."""
        return self._all(name, "field")

    def _all(self, name: str, how: str) -> bool:
        sites = self.sites.get(name)
        return bool(sites) and all(s == how for s in sites)


class Walker:
    """Every finding of one module's AST."""

    def __init__(self, tree: ast.Module, shadowing: frozenset[str] | None = None):
        self.tree = tree
        self.names = Names(tree)
        if shadowing is not None:
            # Only a name the original module already defined for itself (its own `compile`)
            # shadows a builtin: a new top-level `exec = exec` must not hide the calls after it.
            self.names.module_bound &= shadowing
        self.docstrings = _docstrings(tree)
        self.found: list[Finding] = []
        self.called: set[int] = set()
        self.calls: list[ast.Call] = []
        self.read_opens: set[int] = set()
        self.class_targets: set[int] = set()
        self.bindings = _Bindings(tree, self.names)
        self.scope_of: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.name_params: dict[str, tuple[int | None, str, int]] = {}
        """Functions whose parameter reaches a computed attribute name -> (positional index,
        parameter name, 1 for a method else 0): calls from other files must give literals too."""

    def run(self) -> list[Finding]:
        for node in ast.walk(self.tree):  # breadth first: an inner function's calls are its own
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.scope_of.update((id(c), node) for c in ast.walk(node) if isinstance(c, ast.Call))
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self.called.add(id(node.func))
                self.calls.append(node)
                if self.names.canonical(node.func) == "open" and _reads_only(node):
                    self.read_opens.add(id(node.func))
            elif isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    for target, _ in _pairs(stmt):
                        self.class_targets.add(id(target))
        for node in ast.walk(self.tree):
            self._node(node)
        return self.found

    def run_name_params(self) -> dict[str, tuple[int | None, str, int]]:
        """`name_params` after a run."""
        self.run()
        return self.name_params

    def add(self, f: Finding | None) -> None:
        if f is not None:
            self.found.append(f)

    def _node(self, node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self._import(node, line)
        elif isinstance(node, ast.Attribute):
            store = not isinstance(node.ctx, ast.Load)
            self.add(name_finding(node.attr, line, "assigns the attribute" if store else "the attribute",
                                  STORE if store else USE))
            if node.attr in _MODULE_ATTRS:
                self.add(Finding("introspection", node.attr, line, f"the attribute `{node.attr}` reaches a module "
                                 "the file did not import; use what the file already imports"))
            self._reference(node, line)
        elif isinstance(node, ast.MatchClass):
            for name in node.kwd_attrs:
                self.add(name_finding(name, line, "a class pattern reading"))
        elif isinstance(node, ast.Name):
            if node.id not in DANGEROUS_BUILTINS and id(node) not in self.class_targets:  # exec's, _definition's
                store = not isinstance(node.ctx, ast.Load)
                self.add(name_finding(node.id, line, "the name", STORE if store else USE))
            self._reference(node, line)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in self.docstrings:
            for f in string_findings(node.value, line):
                self.add(f)
        elif isinstance(node, ast.Call):
            self._call(node, line)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._definition(node, line)
        elif isinstance(node, ast.keyword) and node.arg:
            self.add(name_finding(node.arg, line, "the keyword", STRING))

    def _import(self, node: ast.Import | ast.ImportFrom, line: int) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                for part in a.name.split("."):
                    self.add(name_finding(part, line, "importing"))
                self.found.append(Finding("imports", a.name.split(".")[0], line, f"imports `{a.name}`"))
            return
        mod = node.module or ""
        top = mod.split(".")[0]
        for a in node.names:
            self.add(name_finding(a.name, line, f"importing from {'.' * node.level}{mod}"))
            canon = f"{mod}.{a.name}"
            if node.level or top not in _STDLIB:
                self._reexport(a.name, f"{'.' * node.level}{mod}", line)
                continue
            if a.name == "*" and top in INTERPRETER_MODULES:
                self.add(Finding("exec", f"{mod}.*", line, f"`from {mod} import *` brings in unnamed process, "
                                 "file or interpreter calls; import names one by one"))
            if _PROCESS_CALLS.match(canon) or a.name in DANGEROUS_BUILTINS and mod == "builtins":
                self.add(Finding("exec", canon, line, f"imports `{canon}`, a process, file or code call"))
            if canon in REFUSED_MODULE_ATTRS or (a.name.startswith("_") and not _is_dunder(a.name)):
                self.add(Finding("introspection", canon, line, f"imports `{canon}`, which reaches further than "
                                 "its module (docs/edit-rules.md); use the module's public functions"))
        if not node.level:
            self.found.append(Finding("imports", top, line, f"imports `{mod}`"))

    def _reexport(self, name: str, source: str, line: int) -> None:
        """A name imported from the repository's own (or a third-party) module: refused when it
        is a module or call the rules would refuse if imported directly."""
        if name in PROCESS_NAMES or name in DANGEROUS_BUILTINS:
            self.add(Finding("exec", f"from-import {name}", line, f"imports `{name}` from {source}: a process, "
                             "code, file or attribute-by-name call under another module's name"))
        elif name in _STDLIB and name not in PURE_STDLIB:
            self.found.append(Finding("imports", "." + name, line, f"imports the module `{name}` through {source}"))

    def _reference(self, node: ast.Name | ast.Attribute, line: int) -> None:
        canon = self.names.canonical(node)
        if canon is None:
            return
        head = canon.split(".")[0]
        if isinstance(node, ast.Name) and node.id in self.names.module_bound and node.id not in self.names.alias:
            return  # the module's own function or class of that name
        if canon == "open" and id(node) in self.read_opens:
            pass  # reading a file: the runtime guard refuses test files and the runner's own
        elif canon == "open":
            self.add(Finding("exec", canon, line, "`open` used other than to read a named file (a mode that "
                             "writes, a mode not written as a literal, an opener, a descriptor, or open passed "
                             "on as a value); a bug fix may read data files, not write them"))
        elif canon in DANGEROUS_BUILTINS or (head in _PROCESS_MODULES and _PROCESS_CALLS.match(canon)):
            self.add(Finding("exec", canon, line, f"`{canon}` runs code, exits, writes files or touches processes "
                             "or the environment; a bug fix changes the logic only (open() may read a file)"))
        taker = canon if canon in NAME_TAKERS or canon in NAME_TABLES else None
        if taker and id(node) not in self.called:
            self.add(Finding("computed-names", taker, line, f"`{taker}` used as a value (aliased or passed "
                             "on); call it directly with a literal attribute name"))
        if canon in _COMPARISON_MAKERS:
            self.add(Finding("comparison-dunders", "<defines>", line, f"`{canon}` generates comparison "
                             "methods; keep the classes' existing comparison behaviour"))
        chain = _dotted(node)
        if isinstance(node, ast.Attribute) and chain and chain[0] in self.names.import_bound and \
                head not in _STDLIB and (node.attr in PROCESS_NAMES or node.attr in DANGEROUS_BUILTINS):
            self.add(Finding("exec", f"from-import {node.attr}", line, f"`{canon}`: a process, code, file or "
                             "attribute-by-name call reached through another module; a bug fix changes the logic only"))
        if isinstance(node, ast.Attribute) and head in _STDLIB and chain and \
                (chain[0] in self.names.imported or chain[0] in self.names.alias):
            last = canon.rsplit(".", 1)[1]
            if canon in REFUSED_MODULE_ATTRS or (last.startswith("_") and not _is_dunder(last)):
                self.add(Finding("introspection", canon, line, f"`{canon}` reaches further than its module "
                                 "(a private name, or one listed in docs/edit-rules.md); use its public functions"))

    def _call(self, node: ast.Call, line: int) -> None:
        canon = self.names.canonical(node.func)
        if canon in NAME_TABLES:
            self.add(Finding("computed-names", canon, line, f"`{canon}()` exposes a namespace by computed "
                             "keys; use the names directly"))
            return
        if canon in NAME_TAKERS:
            index = NAME_TAKERS[canon]
            args = node.args if index is None else node.args[index:index + 1]
            computed = any(isinstance(a, ast.Starred) for a in node.args) or node.keywords or \
                (index is not None and len(node.args) <= index) or not all(self._known_name(a, node) for a in args)
            if computed:
                self.add(Finding("computed-names", canon, line, f"`{canon}` with a name computed at run time; "
                                 "write the attribute name as a literal, or pass it in a variable that only "
                                 "ever holds literals (a loop over a literal tuple, or a parameter every call "
                                 "in this file gives a literal)"))
        fmt = node.func.value if isinstance(node.func, ast.Attribute) and \
            node.func.attr in ("format", "format_map", "vformat") else None
        if canon in ("str.format", "str.format_map"):
            fmt = node.args[0] if node.args else None
        if fmt is not None and not (_safe_literal(fmt) or (isinstance(fmt, ast.Name) and
                                                           self.bindings.literal(fmt.id))):
            self.add(Finding("computed-names", "<format-computed>", line, "`.format` on a string built at run "
                             "time can reach attributes; format a literal string (or a name bound only to "
                             "literals) or use an f-string"))
        if canon == "type" and len(node.args) == 3:
            self.add(Finding("comparison-dunders", "<defines>", line, "`type(name, bases, namespace)` builds a "
                             "class whose methods are not written out; define a plain class"))

    @functools.cached_property
    def _renames(self) -> bool:
        """Whether the file assigns some object's `name` (not self's) or calls setattr/delattr."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) and node.attr == "name" and not isinstance(node.ctx, ast.Load) and \
                    not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                return True
            if isinstance(node, ast.Call) and self.names.canonical(node.func) in ("setattr", "delattr"):
                return True
        return False

    def _parameter(self, name: str, call: ast.Call) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, int | None] | None:
        """(function, positional index) when `name`, at `call`, is a parameter of the innermost
        function around the call that nothing in that function binds again."""
        fn = self.scope_of.get(id(call))
        if fn is None:
            return None
        args = fn.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        if name in positional:
            index: int | None = positional.index(name)
        elif name in [a.arg for a in args.kwonlyargs]:
            index = None
        else:
            return None
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load) or \
                    isinstance(node, ast.arg) and node.arg == name and node not in args.posonlyargs + args.args + \
                    args.kwonlyargs or isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
                return None
        return fn, index

    def _known_name(self, arg: ast.AST, call: ast.Call) -> bool:
        """Whether an attribute-name argument can only be one of the file's safe literals."""
        if _safe_literal(arg):
            return True
        if isinstance(arg, ast.Attribute) and arg.attr == "name" and isinstance(arg.value, ast.Name):
            # a dataclass field's name: declared in a class body, where a dunder is refused --
            # unless this file renames some object's `name` (a Field's, to a computed string)
            return self.bindings.field(arg.value.id) and not self._renames
        if not isinstance(arg, ast.Name):
            return False
        if self.bindings.literal(arg.id):
            return True
        param = self._parameter(arg.id, call)
        if param is None:
            return False
        fn, index = param
        # A dunder method is called by the interpreter with values no call here shows (`format(x,
        # spec)` calls `__format__(spec)`, `x[key]` calls `__getitem__(key)`).
        if _is_dunder(fn.name) or len(self.bindings.defs.get(fn.name, ())) != 1:
            return False
        shift = 1 if id(fn) in self.bindings.methods else 0
        callers = [c for c in self.calls if isinstance(c.func, (ast.Name, ast.Attribute))
                   and (c.func.id if isinstance(c.func, ast.Name) else c.func.attr) == fn.name]
        uses = sum(1 for n in ast.walk(self.tree) if isinstance(n, (ast.Name, ast.Attribute))
                   and (n.id if isinstance(n, ast.Name) else n.attr) == fn.name)
        if uses != len(callers):  # passed around as a value: its callers are out of sight
            return False
        if not calls_give_literals(callers, index, arg.id, shift):
            return False
        self.name_params[fn.name] = (index, arg.id, shift)
        return True

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, line: int) -> None:
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                for target, _ in _pairs(stmt):
                    if isinstance(target, ast.Name):
                        self.add(name_finding(target.id, getattr(stmt, "lineno", line), "a class attribute", DEFINE))
            return
        self.add(name_finding(node.name, line, "defines", DEFINE))


def calls_give_literals(calls: list[ast.Call], index: int | None, param: str, shift: int) -> bool:
    """Whether every call gives the parameter (`index`: its position, `shift`: 1 when calls
    through an attribute pass `self` implicitly) a safe string literal, or leaves it out."""
    for call in calls:
        pos = index - (shift if isinstance(call.func, ast.Attribute) else 0) if index is not None else None
        given = [k.value for k in call.keywords if k.arg == param]
        if pos is not None and 0 <= pos < len(call.args):
            given.append(call.args[pos])
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords) \
                or not all(_safe_literal(g) for g in given):
            return False
    return True


def foreign_name_calls(tree: ast.Module, takers: dict[str, tuple[int | None, str, int]]) -> list[int]:
    """Lines of `tree` that call one of another file's parameter-fed attribute-name functions
    (`takers`, Walker.name_params) without a safe literal, or take it as a value."""
    bad = []
    called: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            called.add(id(node.func))
            if name in takers and not calls_give_literals([node], *takers[name]):
                bad.append(node.lineno)
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else \
            node.name if isinstance(node, ast.alias) else None
        if name in takers and id(node) not in called and not isinstance(node, ast.alias):
            bad.append(getattr(node, "lineno", 0))
    return sorted(set(bad))


def _reads_only(call: ast.Call) -> bool:
    """An `open(...)` call that can only read a named file: a literal read-only mode (or none),
    no opener, no descriptor number, nothing unpacked into it."""
    if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > 3:
        return False
    if call.args and isinstance(call.args[0], ast.Constant) and not isinstance(call.args[0].value, str):
        return False
    mode = call.args[1] if len(call.args) > 1 else None
    for k in call.keywords:
        if k.arg is None or k.arg in ("opener", "closefd", "file"):
            return False
        if k.arg == "mode":
            mode = k.value
    return mode is None or (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
                            and set(mode.value) <= set("rbt") and "r" in mode.value)


def allowances(tree: ast.Module | None) -> set[tuple[str, str]]:
    """(rule, key) of everything the original does, and every identifier it mentions."""
    if tree is None:
        return set()
    out = {(f.rule, f.key) for f in Walker(tree).run()}
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else \
            node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
            node.value.isidentifier() else getattr(node, "name", None)
        if isinstance(name, str):
            out.add(("introspection", name))
    return out

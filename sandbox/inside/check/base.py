"""Names and helpers every part of the check runner uses: the runner's private file names,
its exit statuses, path arithmetic without library code, and the C-level readers of types
the guard looks at foreign objects through (no metaclass or `__getattr__` can answer them)."""
from __future__ import annotations

import os
import sys
import types

CHECK = __name__.rpartition(".")[0]
"""This package's name where it runs (`fixrl_inside.check` in a sandbox)."""
PACKAGE = CHECK.rpartition(".")[0]
"""The inside package's name where it runs (`fixrl_inside` in a sandbox)."""
PRIVATE = ".fixrl-"
"""Every file of the runner in the sandbox has a path component starting with this."""
EVENTS_NAME = ".fixrl-events"
JUNIT_NAME = ".fixrl-junit.xml"
REPORT_NAME = ".fixrl-report.json"
LAUNCHER_PREFIX = ".fixrl-launch-"
"""The folder of the private directory a one-shot check's runner files are written to (public
sources: reading them is no tampering; the supervisor deletes it first thing)."""
FRAME_TAG = "fixrl-check-report"
TAMPER_EXIT = 97
"""Exit status of a judged process the guard stopped."""
EXIT_GRACE = 0.1
"""Seconds the supervisor keeps forwarding output after the judged process exited (for
output its leftover children still write)."""
MAX_REPORT_IDS = 20_000
"""Tests beyond this many are counted, not listed, in the report."""

_CORE = ("collections", "collections.abc", "_collections_abc", "abc", "functools", "copy", "difflib", "pprint",
         "reprlib", "enum", "types", "weakref", "_weakrefset")
"""The standard library the guard's own comparisons and unittest's assertions run (`Counter.__eq__`,
`ChainMap.__contains__`, `assertCountEqual`'s counting): their functions look their helpers up in
their module's globals before the builtins, so one name set on a module (`collections.all =
bool`) would answer for them. Watched like pytest's own, in every check of a test and at every
comparison the guard decides; a name added to them that is code counts too."""
_TEST_NAMES = ("conftest",)
_TEST_DIRS = ("tests", "test")
_PROTECTED_NAMES = {"conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg",
                    "pyproject.toml",
                    "sitecustomize.py", "usercustomize.py"}
_PROTECTED_SUFFIXES = (".pyc", ".pyo", ".pth")
_FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"}

_GENERATORS = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_CODE_ATTRS = {"__code__", "gi_code", "cr_code", "ag_code"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PROTECTED_MODULES = ("_thread", "_signal", "_imp", "posix")


def _abspath(path, cwd):
    """`path` made absolute against `cwd` and normalised, with string operations only (no
    library code that the code under test could have replaced, no symlink resolution)."""
    if not path.startswith("/"):
        path = cwd + "/" + path
    parts = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part and part != ".":
            parts.append(part)
    return "/" + "/".join(parts)


_CODE = type(_abspath.__code__)
_TYPE_DICT = type.__dict__["__dict__"].__get__
_TYPE_MRO = type.__dict__["__mro__"].__get__
_TYPE_FLAGS = type.__dict__["__flags__"].__get__
_TYPE_NAME = type.__dict__["__name__"].__get__
_TYPE_QUALNAME = type.__dict__["__qualname__"].__get__
_MODULE_TYPE = type(sys)
_TYPE_DICT_MODULE = _MODULE_TYPE.__dict__["__dict__"].__get__


_FUNCTION = type(_abspath)
_FRAME = types.FrameType


class _Bound:
    def method(self):
        pass


_METHOD = type(_Bound().method)


def _type_dict(tp):
    """A class's own namespace, read through `type`'s C descriptor (no metaclass involved)."""
    return _TYPE_DICT(tp)


def _mro(tp):
    return _TYPE_MRO(tp)


def _function_code(value):
    """The code of a plain function, a bound method, a static/class method or a property's
    getter, by type only; None for anything else."""
    kind = type(value)
    if kind is _FUNCTION:
        return value.__code__
    if kind in (staticmethod, classmethod) or kind is _METHOD:
        return _function_code(value.__func__)
    if kind is property:
        return _function_code(value.fget)
    return None


_HEAPTYPE = 1 << 9
"""Py_TPFLAGS_HEAPTYPE: set on classes made at run time (class statements, type()), and on C
extension types made from a spec (`re.Match` in 3.11), not on static C types."""
_IMMUTABLETYPE = 1 << 8
"""Py_TPFLAGS_IMMUTABLETYPE: static C types and C extension types from a spec; Python code
cannot make a class with it (without ctypes, which the guard refuses)."""


def _c_type(klass) -> bool:
    """A type implemented in C: its dunders are no one's change."""
    flags = _TYPE_FLAGS(klass)
    return not flags & _HEAPTYPE or bool(flags & _IMMUTABLETYPE)


_C_SLOTS = (type(object.__eq__), type(dict.__getitem__), type(int.__add__))
"""wrapper_descriptor, method_descriptor (and their kin): a C type's methods."""


def _own(name):
    """Whether module `name` is this runner's own code (a module of the inside package)."""
    return name == PACKAGE or name.startswith(PACKAGE + ".")

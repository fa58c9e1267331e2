"""What changed code may reach, stated positively: the tables the edit rules (tasks.check.rules)
judge a change against, each entry chosen by what it lets code reach, not by how it is spelled.

A changed file may import: what its original imported, the repository's own modules, a module a
task or suite allows (`rules.allow_imports`), a third-party module the repository's non-test
sources import (not one of `tasks.check.rules.INTERPRETER_MODULES`), and PURE_STDLIB. Any other
standard-library module is refused, even when the repository imports it elsewhere: it reaches
the process, the filesystem, the interpreter or code execution.

Not guaranteed here: a third-party module the repository depends on is allowed whatever it can
reach (its own submodules that wrap ctypes or processes included); the runtime guard stands
behind that.
"""
from __future__ import annotations

PURE_STDLIB = frozenset({
    # Numbers and computation only; no state outside the values passed in.
    "math", "cmath", "decimal", "fractions", "numbers", "statistics", "random",
    # Iteration and functions: they call what they are given, nothing else.
    "itertools", "functools", "operator", "heapq", "bisect", "collections", "copy",
    # Declarations: classes and annotations (dataclasses and namedtuple compile code only from
    # identifiers they validate; typing's evaluating helpers are in REFUSED_MODULE_ATTRS).
    "dataclasses", "enum", "typing", "abc", "graphlib",
    # Text and bytes: parsing and formatting of the values passed in.
    "re", "string", "textwrap", "difflib", "unicodedata", "json", "csv", "struct", "base64", "binascii",
    "hashlib", "zlib", "html", "keyword", "reprlib", "array",
    # Dates: calendar arithmetic (no clock setting, no sleeping).
    "datetime", "calendar",
})
"""Standard-library modules any changed file may import: none of them reaches the process, the
filesystem (beyond what `open` already may), frames, code objects, the heap or import machinery
through a public name. `time` (sleep), `io`/`pathlib`/`os` (writes), `contextlib` (redirects the
process's streams), `warnings`/`logging` (change the run's configuration), `types`, `inspect`,
`weakref`, `gc`, `importlib` and `builtins` are not here on purpose."""

REFUSED_MODULE_ATTRS = frozenset({
    "string.Formatter",  # get_field walks attribute paths computed at run time
    "typing.get_type_hints", "typing.ForwardRef",  # evaluate annotation strings as code
    "functools.recursive_repr",
    "dataclasses.make_dataclass",  # a namespace dict: methods whose names are not written out
    "copy.copyreg",
})
"""Names of PURE_STDLIB modules that reach further than the module does (any `_private` name of a
standard-library module is refused too: `random._os`, `typing.sys`)."""

ATTRIBUTE_DUNDERS = frozenset({
    "__name__", "__qualname__", "__doc__", "__module__", "__init__", "__repr__", "__str__", "__all__",
    "__version__", "__slots__", "__future__", "__main__", "__file__", "__post_init__",
})
"""Dunders a change may name anywhere (attribute, name, string): descriptive strings, the
constructor, the module's own path. Reading `__class__` is allowed as well (it is `type(x)`),
assigning it is not. Every other dunder is refused unless the original file names it."""

PROTOCOL_DUNDERS = frozenset({
    "__init__", "__post_init__", "__repr__", "__str__", "__format__", "__len__", "__length_hint__",
    "__iter__", "__next__", "__reversed__", "__getitem__", "__setitem__", "__delitem__", "__missing__",
    "__enter__", "__exit__", "__call__", "__hash__", "__bool__", "__int__", "__float__", "__index__",
    "__complex__", "__round__", "__trunc__", "__floor__", "__ceil__", "__neg__", "__pos__", "__abs__",
    "__invert__", "__copy__", "__deepcopy__",
    *(f"__{p}{op}__" for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow",
                                "lshift", "rshift", "and", "xor", "or") for p in ("", "r", "i")),
})
"""Methods a class in changed code may define although the original defined no such method:
each returns one value per call and decides nothing about what the value equals (the runtime
guard still judges a value reaching a hidden test's comparison with any of them). Comparison
methods (`__eq__`, `__lt__`, `__contains__`, ...), attribute hooks (`__getattr__`,
`__getattribute__`, `__setattr__`, descriptors), class-creation hooks (`__new__`,
`__init_subclass__`, `__class_getitem__`, `__instancecheck__`) and finalizers (`__del__`) are
not here: those are the `comparison-dunders` or `introspection` rule's."""

PROCESS_NAMES = frozenset({
    "system", "popen", "fork", "forkpty", "kill", "killpg", "_exit", "environ", "putenv", "Popen", "check_call",
    "check_output", "exec_", "execfile", "import_module", "open", "exec", "eval", "compile", "getattr", "setattr",
    "delattr", "vars", "globals", "locals",
})
"""Names whose import from a repository module is refused unless the original file imports the
same (`from .compat import system`): a repository module re-exporting a process, exec, file or
attribute-by-name call would be that call in disguise, out of reach of the rules on the call."""

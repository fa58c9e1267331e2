"""The wrappers the guard installs into modules (thread start, signal handlers, built-in
module creation, weakref finalizers, pytest's test-module compiler, unittest's asserts) and
the sealing of pytest's configuration: each only asks the guard (`sys.audit("fixrl.*")`)."""
from __future__ import annotations

import _imp
import _signal
import _thread
import builtins
import importlib
import os
import posix
import signal  # its handlers and pidfd signals go through the guard
import sys
import threading
import unittest
import unittest.case
import weakref

from .base import _CODE, _FUNCTION
from .values import _AUDIT_SENTINEL

# The wrappers installed into modules (code under test can reach them) are detached: each has
# globals of its own, holds nothing of the guard's, and only asks it (sys.audit("fixrl.*"));
# a wrapper whose globals were changed can only fail its own caller.

def _detached(fn, **names):
    return _FUNCTION(fn.__code__, {"__builtins__": dict(vars(builtins)), "__name__": "fixrl_check", "sys": sys,
                                   **names}, fn.__name__, fn.__defaults__)


def _finalize_init(self, obj, func, /, *args, **kwargs):
    """weakref.finalize.__init__ through the guard (see the "fixrl.finalize" rule)."""
    box = []
    sys.audit("fixrl.finalize", self, obj, func, args, kwargs, box)
    if not box:
        raise TypeError("cannot register a finalizer")


def _start_new_thread(function, args, kwargs=None):
    """_thread.start_new_thread through the guard (a thread started by changed code is its)."""
    box = []
    sys.audit("fixrl.thread", function, args, kwargs, box)
    if not box:
        raise RuntimeError("can't start new thread")
    return box[0]


def _set_signal(signalnum, handler):
    """_signal.signal through the guard."""
    box = []
    sys.audit("fixrl.signal", signalnum, handler, box)
    if not box:
        raise RuntimeError("signal handlers are not available")
    return box[0]


def _create_builtin(spec):
    box = []
    sys.audit("fixrl.create_builtin", spec, box)
    if not box:
        raise ImportError(f"cannot create built-in module {getattr(spec, 'name', spec)!r}")
    return box[0]


def _exec_builtin(module):
    box = []
    sys.audit("fixrl.exec_builtin", module, box)
    if not box:
        raise ImportError(f"cannot initialise built-in module {getattr(module, '__name__', module)!r}")
    return box[0]


def _make_node(path, mode=0o600, device=0, *, dir_fd=None):
    """os.mkfifo / os.mknod through the guard (neither raises an audit event of its own): a
    FIFO or device node where the check or a test reads a file is judged as writing it."""
    box = []
    sys.audit("fixrl.mknod", path, mode, device, dir_fd, KIND, box)  # noqa: F821 - KIND: the copy's global
    if not box:
        raise PermissionError(f"cannot make a node at {path!r}")
    return None


def _pidfd(*args, **kwargs):
    """os.pidfd_open / signal.pidfd_send_signal through the guard (no audit event of their own):
    a handle on a process, or a signal sent through one, is process control."""
    box = []
    sys.audit("fixrl.pidfd", NAME, args, kwargs, box)  # noqa: F821 - NAME: the detached copy's global
    if not box:
        raise PermissionError(f"{NAME} is not available")  # noqa: F821
    return box[0]


def _rewrite_test(fn, config):
    """pytest's `_rewrite_test` (how a test module or conftest is compiled) through the guard."""
    box = []
    sys.audit("fixrl.rewrite", fn, config, box)
    if not box:
        raise ImportError(f"cannot compile test module {fn}")
    return box[0]


def _sealed_get(self):
    box = []
    sys.audit("fixrl.sealed", self, NAME, None, box)  # noqa: F821 - NAME: the detached copy's global
    return box[0] if box else None


def _sealed_put(self, value):
    sys.audit("fixrl.sealed", self, NAME, value, None)  # noqa: F821


_UNITTEST_TEMPLATE = """
def assert_method(self, *args, **kwargs):
    "\\x00fixrl: sys.audit\\x00".__call__("fixrl.compare", "unittest", args[:2], box := [])
    box[0]
    return "\\x00fixrl: original\\x00".__call__(self, *args, **kwargs)
"""
_ORIGINAL_SENTINEL = "\x00fixrl: original\x00"

_COMPILE_TEMPLATE = """
def compile(*args, **kwargs):
    made = None
    try:
        made = "\\x00fixrl: original\\x00".__call__(*args, **kwargs)
    finally:
        "\\x00fixrl: sys.audit\\x00".__call__("fixrl.compiled", made)
    return made
"""


def _guarded_assert(original):
    """`unittest.TestCase.assert*` that has the guard judge its first two arguments (the values
    compared) before the original runs. Both sys.audit and the original are constants of its
    code: nothing reachable from it (globals, defaults, cells) changes what it calls."""
    return _with_constants(_UNITTEST_TEMPLATE, original)


def _with_constants(template, original, builtins_of=None):
    """The one function `template` defines, with sys.audit and `original` put in place of their
    sentinels among its constants: nothing reachable from it (globals, defaults, cells)
    changes what it calls. `builtins_of`: the builtins its frames show to C code they call
    (none by default; a C original that may import -- compile, whose warnings and codecs do --
    needs the interpreter's)."""
    module = compile(template, "<fixrl-check>", "exec", dont_inherit=True)
    code = next(c for c in module.co_consts if type(c) is _CODE)
    code = code.replace(co_consts=tuple(sys.audit if c == _AUDIT_SENTINEL else original if c == _ORIGINAL_SENTINEL
                                        else c for c in code.co_consts), co_name=original.__name__)
    wrapper = _FUNCTION(code, {"__builtins__": {} if builtins_of is None else builtins_of}, original.__name__)
    wrapper.__qualname__, wrapper.__doc__ = original.__qualname__, original.__doc__
    return wrapper


def _guarded_compile(original):
    """builtins.compile that reports the code it made ("fixrl.compiled"). Compiling a syntax
    tree raises an audit event that names no file, so the code it makes could not be told
    apart later: with the report, the guard records that very code object as changed code's
    when changed code was on the stack (werkzeug's URL rules compile a tree they build, called
    from a changed flask module)."""
    return _with_constants(_COMPILE_TEMPLATE, original, builtins)


def _wrap_unittest():
    case = unittest.case.TestCase
    for name, value in list(vars(case).items()):
        if (name.startswith("assert") or name.startswith("fail") and name != "fail") and isinstance(value, _FUNCTION):
            setattr(case, name, _guarded_assert(value))


def _wrap_modules():
    """Install the wrappers; the code of the compile wrapper (the guard knows its frames by it)."""
    _wrap_unittest()
    rewrite = importlib.import_module("_pytest.assertion.rewrite")
    rewrite._rewrite_test = _detached(_rewrite_test)
    _thread.start_new_thread = _thread.start_new = threading._start_new_thread = _detached(_start_new_thread)
    _signal.signal = _detached(_set_signal)
    _imp.create_builtin = _detached(_create_builtin)
    _imp.exec_builtin = _detached(_exec_builtin)
    weakref.finalize.__init__ = _detached(_finalize_init)
    os.mkfifo = posix.mkfifo = _detached(_make_node, KIND="mkfifo")
    os.mknod = posix.mknod = _detached(_make_node, KIND="mknod")
    if hasattr(posix, "pidfd_open"):
        os.pidfd_open = posix.pidfd_open = _detached(_pidfd, NAME="os.pidfd_open")
    if hasattr(_signal, "pidfd_send_signal"):
        signal.pidfd_send_signal = _signal.pidfd_send_signal = _detached(_pidfd, NAME="signal.pidfd_send_signal")
    builtins.compile = _guarded_compile(builtins.compile)
    return builtins.compile.__code__


def _seal(st, obj, names):
    """Move `names` out of `obj` into the guard; afterwards only the code of
    `_pytest.assertion` can read or set them (anyone else reading them is tampering)."""
    cls = type(obj)
    props = {n: property(_detached(_sealed_get, NAME=n), _detached(_sealed_put, NAME=n)) for n in names}
    st.sealed[id(obj)] = {n: obj.__dict__.pop(n) for n in names if n in obj.__dict__}
    obj.__class__ = type(cls.__name__, (cls,), {"__module__": cls.__module__, **props})

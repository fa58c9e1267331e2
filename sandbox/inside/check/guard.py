"""Installing the runtime guard: the audit hook, its state and the wrappers (the check
package's docstring says what the guard treats as tampering and what it does not guarantee)."""
from __future__ import annotations

import _imp
import _signal
import _thread
import ast
import builtins
import gc
import importlib
import importlib.machinery
import json
import operator
import os
import sys
import threading
import traceback
import types
import unittest  # noqa: F401 - watched by the snapshot
import unittest.case  # noqa: F401
import unittest.mock  # noqa: F401 - its classes are watched (`_find_watched_classes`)
import weakref

import _pytest.config

from .base import _CODE, _FUNCTION, _MODULE_TYPE, _TYPE_DICT_MODULE, _TYPE_QUALNAME, CHECK, EVENTS_NAME, _own
from .core import _enter, _leave, _tamper
from .emitter import _emitter
from .plugin import _Plugin

# Looked up in the guard's private namespace (`_install_guard`), not through these names:
from .rules import _rules  # noqa: F401
from .wrappers import _wrap_modules  # noqa: F401


def _codes_of(objects):
    """Every code object of these functions, classes and modules, nested ones included."""
    out, todo = set(), []
    for obj in objects:
        if isinstance(obj, type(sys)):
            todo += [v for v in vars(obj).values() if getattr(v, "__module__", None) == obj.__name__]
        else:
            todo.append(obj)
    seen = set()
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, type):
            todo += list(vars(obj).values())
        elif isinstance(obj, (staticmethod, classmethod)):
            todo.append(obj.__func__)
        elif isinstance(obj, property):
            todo += [obj.fget, obj.fset]
        code = obj if isinstance(obj, _CODE) else getattr(obj, "__code__", None) if callable(obj) else None
        if isinstance(code, _CODE):
            out.add(code)
            todo += [c for c in code.co_consts if isinstance(c, _CODE)]
    return out


def _sinks():
    """Code of stdlib functions that take frames or tracebacks and never hand a frame back."""
    import collections  # noqa: PLC0415 - stdlib modules pytest already imported
    import enum  # noqa: PLC0415
    import logging  # noqa: PLC0415
    import typing  # noqa: PLC0415

    tb = traceback
    funcs = [logging.Logger.findCaller, tb.extract_stack, tb.format_stack, tb.print_stack, tb.StackSummary.extract,
             tb.StackSummary._extract_from_extended_frame_gen, tb.TracebackException.__init__,
             collections.namedtuple, getattr(typing, "_caller", None), getattr(enum.EnumType, "_create_", None)]
    return {code for code in _codes_of([f for f in funcs if f is not None])}


def _install_guard(spec, active=True):
    """Install the audit hook and the thread/signal/builtin-module wrappers for `spec` (root,
    workdir, changed: abs path -> categories, hidden: abs paths); the plugin's emitter (a
    generator's `send`). Every function the guard calls runs with a private copy of the
    runner's globals -- those of every module of this package, merged into one namespace (their
    names are distinct, as they were when the runner was one file) -- so replacing a
    module-level name later changes nothing here. active=False: the emitter only (a
    benchmark's baseline)."""
    spaces = [vars(module) for name, module in list(sys.modules.items()) if name.startswith(CHECK + ".")]
    g = {}
    for space in spaces:
        g.update(space)
    g["__builtins__"] = dict(vars(builtins))
    g["operator"] = types.SimpleNamespace(is_=operator.is_, getitem=operator.getitem)
    for name, val in list(g.items()):
        if isinstance(val, _FUNCTION) and any(val.__globals__ is space for space in spaces):
            g[name] = _FUNCTION(val.__code__, g, val.__name__, val.__defaults__, val.__closure__)
    st = g["_guard_core"](spec)
    st.active = active
    handlers = g["_rules"](st)
    hook = g["_hook"](st, handlers)
    vault = g["_emitter"](st)
    next(vault)
    if active:
        st.compile_code = g["_wrap_modules"]()
        sys.addaudithook(hook)
    return vault.send


_CONFIGURE_CODE = _pytest.config.Config._do_configure.__code__
"""pytest's configuration phase, the only frame an environment plugin's bracketed configure may
run under (`emitter`'s "mark" and "adopt")."""


def _guard_core(spec):
    """The guard's state and its basic operations, in a namespace only closures hold."""
    st = types.SimpleNamespace(
        root=spec["root"], workdir=spec["workdir"], changed=spec["changed"], hidden=spec["hidden"],
        own=spec.get("own", {}), originals=spec.get("originals", {}), original_methods={}, original_compiled={},
        modules=sys.modules,
        hidden_names={p.rsplit("/", 1)[-1] for p in spec["hidden"]},
        fifo=spec["workdir"] + "/" + EVENTS_NAME, tainted={}, cache={}, thread_taint={}, busy=set(),
        sealed={}, type_cache={}, code_taint={}, last_made={}, made_untrusted={}, compile_code=None, compiling={},
        gc_callbacks=gc.callbacks, gc_callbacks_before=list(gc.callbacks),
        main=_thread.get_ident(), pid=os.getpid(), gc_depth=0, gc_was=True, builtins={},
        gc_isenabled=gc.isenabled, gc_disable=gc.disable, gc_enable=gc.enable,
        fifo_flags=os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC,
        getframe=sys._getframe, get_ident=_thread.get_ident, getpid=os.getpid, getcwd=os.getcwd, open=os.open,
        write=os.write,
        close=os.close, set_blocking=os.set_blocking, exit=os._exit, fsdecode=os.fsdecode, dumps=json.dumps,
        sinks=_sinks(), plugin_codes=_codes_of([_Plugin]), snapshot=None, marked=None, collected=False,
        configure_code=_CONFIGURE_CODE,
        start_thread=_thread.start_new_thread, signal=_signal.signal, mkfifo=os.mkfifo, mknod=os.mknod,
        pidfd={"os.pidfd_open": getattr(os, "pidfd_open", None),
               "signal.pidfd_send_signal": getattr(_signal, "pidfd_send_signal", None)},
        create_builtin=_imp.create_builtin, exec_builtin=_imp.exec_builtin, finalize_init=weakref.finalize.__init__,
        audit=sys.audit, compile=builtins.compile, only_ast=ast.PyCF_ONLY_AST, fix_locations=ast.fix_missing_locations,
        ast=types.SimpleNamespace(**{k: v for k, v in vars(ast).items() if isinstance(v, type)}),
        stat=os.stat, read=os.read, fspath=os.fspath, read_flags=os.O_RDONLY | os.O_CLOEXEC, produced={},
        verified=set(), written_in_tests=set(),
        import_direct=_codes_of(_import_direct()), import_via=_codes_of(_import_via()),
        import_call=_codes_of([importlib._bootstrap._call_with_frames_removed]),
        import_source=_codes_of([importlib._bootstrap_external.SourceLoader.source_to_code]),
        signature_readers=_codes_of(_signature_readers()), opcodes=_opcodes(), frame_sites={},
        install_dirs=_install_dirs(),
        readers=_codes_of([importlib.import_module("_pytest.assertion.rewrite"),
                           importlib.import_module("_pytest.assertion")]),
        watched_classes=_watched_classes(), module_spec=importlib.machinery.ModuleSpec, threading=threading,
        rewrite_hook=importlib.import_module("_pytest.assertion.rewrite").AssertionRewritingHook,
    )
    st.emitter_code = _emitter.__code__
    return st


_WATCHED = {}


def _watched_classes():
    """A copy of `_find_watched_classes` (found once per process: a forking sandbox's
    interpreter finds them before it forks)."""
    if not _WATCHED:
        _WATCHED.update(_find_watched_classes())
    return dict(_WATCHED)


def _find_watched_classes():
    """id -> name of the classes whose attributes only pytest and the tests may set: pytest's,
    pluggy's, unittest's, this runner's, and those the guard reads paths and sources through."""
    roots = ("_pytest", "pytest", "pluggy", "unittest", "pathlib", "ast", "linecache")
    out = {}
    for name, mod in list(sys.modules.items()):
        if type(mod) is _MODULE_TYPE and (name.split(".")[0] in roots or _own(name)):
            for val in list(_TYPE_DICT_MODULE(mod).values()):
                if type(val) is type or isinstance(val, type):
                    out[id(val)] = f"{name}.{_TYPE_QUALNAME(val)}"
    return out


def _opcodes():
    """The byte-code facts `_frame_consumed` reads a trusted caller's call site with."""
    import opcode  # noqa: PLC0415 - stdlib, imported by dis/inspect already

    m = opcode.opmap
    nb_ops = [name for name, _ in getattr(opcode, "_nb_ops", ())]
    fast = {"LOAD": m["LOAD_FAST"], "STORE": m["STORE_FAST"]}
    return types.SimpleNamespace(
        calls=frozenset(m[n] for n in ("CALL", "CALL_FUNCTION", "CALL_METHOD") if n in m),
        cache=m.get("CACHE", -1), extended_arg=m["EXTENDED_ARG"], load_attr=m["LOAD_ATTR"],
        precall=m.get("PRECALL", -1), store_fast=m["STORE_FAST"], name_shift=1 if sys.version_info >= (3, 12) else 0,
        haslocal=frozenset(opcode.haslocal),
        rebinds=frozenset(m[n] for n in ("STORE_FAST", "DELETE_FAST") if n in m),
        load_fast=frozenset(m[n] for n in ("LOAD_FAST", "LOAD_FAST_CHECK") if n in m),
        # 3.13's LOAD_FAST_LOAD_FAST & co: two locals in one argument (4 bits each), split into
        # a load or store of each; a half not known here (3.14's _BORROW) stays the fused opcode,
        # which no frame rule accepts as a plain load
        fused={op: tuple(fast.get(half.split("_")[0], op) for half in name.split("FAST_", 1))
               for name, op in m.items() if name.count("FAST") > 1},
        return_value=m["RETURN_VALUE"], nop=m["NOP"], jump_forward=m["JUMP_FORWARD"], load_const=m["LOAD_CONST"],
        is_op=m.get("IS_OP", -1), attr_loads=frozenset(m[n] for n in ("LOAD_ATTR", "LOAD_METHOD") if n in m),
        truth_tests=frozenset(op for name, op in m.items() if name.startswith("POP_JUMP") or name == "TO_BOOL"),
        subscr=(m["BINARY_SUBSCR"], None) if "BINARY_SUBSCR" in m else (m["BINARY_OP"], nb_ops.index("NB_SUBSCR")))


def _install_dirs():
    """The interpreter's standard library and site-packages directories ('/'-terminated), as
    named and with links resolved: modules imported from them are installed code."""
    import sysconfig  # noqa: PLC0415 - stdlib, already imported by site

    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}
    dirs |= {os.path.realpath(d) for d in dirs}
    return tuple(sorted(d.rstrip("/") + "/" for d in dirs))


def _signature_readers():
    """inspect's functions that read a function's code object for its signature alone (argument
    names, counts and flags, none of its constants or byte-code) and never hand the code object
    out: `inspect.signature` of a test's own function, as libraries like toolz's `curry` take of
    the callables tests pass them, reveals nothing that `__defaults__` does not already."""
    inspect = importlib.import_module("inspect")
    names = ("_signature_from_function", "_signature_is_functionlike", "_has_code_flag")
    return [getattr(inspect, n) for n in names if callable(getattr(inspect, n, None))]


def _import_direct():
    """Functions that compile or exec code read from disk themselves (pytest's rewriter)."""
    rewrite = importlib.import_module("_pytest.assertion.rewrite")
    bootstrap_external = importlib._bootstrap_external
    return [rewrite._rewrite_test, rewrite._read_pyc, rewrite.AssertionRewritingHook.exec_module,
            bootstrap_external._compile_bytecode]


def _import_via():
    """Functions of the import system that compile or exec what they read from disk through
    `_call_with_frames_removed`."""
    bootstrap_external = importlib._bootstrap_external
    return [bootstrap_external.SourceLoader.get_code, bootstrap_external._LoaderBasics.exec_module]


def _hook(st, handlers):
    """The audit hook: dispatch the events the guard judges, never re-entered by a thread."""
    get, get_ident, busy, getframe = handlers.get, st.get_ident, st.busy, st.getframe

    def audit_hook(event, args):
        handler = get(event)
        if handler is None:
            return
        tid = get_ident()
        if tid in busy:
            return
        _enter(st, tid)
        try:
            why = handler(args, getframe(1))
            if why:
                _tamper(st, f"{event}: {why}")
        finally:
            _leave(st, tid)

    return audit_hook

"""The hidden check's runner, as it runs INSIDE the sandbox: a supervisor, the judged pytest
process it forks, the runtime guard installed in that process, and the pytest plugin.

Standard library, pytest and pluggy only (never `fixrl`): `tasks.check.run` ships this file into
the sandbox -- as a one-shot launcher script, or as the prelude of a forking sandbox's
interpreter (sandbox.forking), which imports it once and calls `supervise` in a fork per check.

How a verdict is made

- `supervise` (the supervisor) never imports repository code. It creates a private directory
  (mode 0700, every name in it starting with `.fixrl-`) holding an event FIFO and an empty
  JUnit file, then forks the judged process. The judged process's stdout and stderr are a
  pipe that the supervisor forwards to its own output with every NUL byte removed; it keeps
  no other descriptor of the supervisor's.
- The judged process installs the guard (a PEP 578 audit hook, which cannot be removed)
  before any repository code is imported, then runs pytest with the plugin. The plugin sends
  one event per collection, per test phase (setup, each call report, teardown) and at the end
  of the session, each as one write to the FIFO, which it opens for that write only.
- The supervisor reads the events as they come, waits for the judged process, derives each
  test's outcome from the events (`verdicts`), writes the report to its private directory and
  prints, last, one frame `NUL fixrl-check-report <sha256> <bytes> NUL`. The host
  (`tasks.check.run`) believes a report only when its digest matches the frame in the command's
  output. No key exists anywhere: the frame is unforgeable because only the supervisor can
  write a NUL byte to that stream (the judged process's output is filtered, and the
  supervisor is not dumpable, so /proc/PID/fd of it is closed to the sandbox's uid).
- Events are monotone: a test passes only when its setup, every call report and its teardown
  passed, so an extra forged "passed" cannot hide a real failure; an event out of collection
  order, a duplicate setup or teardown, a tamper event, a missing session end, or a judged
  process that exited early is a fail.

The guard (`_install_guard`)

An operation is attributed to the agent when a frame whose code comes from a file the agent
changed or added (the host's `GuardSpec`), or from code compiled at run time while such a
frame was on the stack, is anywhere on the call stack, or when it runs in a thread, or a
weakref finalizer, that such code started. Attributed, and not one the changed file's
original (or the reference fix) already performs (`tasks.check.guard.categories`), these are
tampering: the run stops at once (os._exit) with the event named in the output, and the
verdict is fail:

- frames (sys._getframe, sys._current_frames, tb_frame, gi_frame, cr_frame, ag_frame), except
  through stdlib consumers that never hand a frame back (logging's findCaller, traceback's
  summaries, namedtuple, typing, enum);
- the heap (gc.get_objects/get_referrers/get_referents), ctypes, process creation and signals
  to processes (subprocess, os.system/exec*/spawn*/posix_spawn/fork/forkpty, pty, os.kill),
  sys.settrace/setprofile, installing a signal handler, importing unittest.mock;
- reading the code object of a test function, or opening any test file (the hidden check's,
  the repository's, conftest.py, their caches) -- never allowed; writing Python sources in
  the repository.

Regardless of who is on the stack: adding an audit hook, touching the runner's own files
(anything named `.fixrl-*`: the FIFO but through the emitter, the report, the output file;
the JUnit file only from a stack free of agent code), writing the hidden check files,
conftest.py, pytest's configuration files, `.pyc`/`.pth` files or sitecustomize, re-creating
`_thread`, `_signal` or `_imp` to get unguarded copies, replacing the code of a guard wrapper.

The hidden tests' own values: the guard compiles every module pytest's import hook would
rewrite (test modules, conftests) itself, instead of pytest's assertion rewriting: each
one-operator comparison, negation and assert test first has the guard judge its operands, and
a value whose comparison, hash, truth or numeric dunders come from changed code that never
defined such (`tasks.check.guard`'s "dunders"), or mock.ANY, stops the run; `unittest.TestCase`'s
assert methods judge their first two arguments the same way. A hidden test module that runs
any code but the guard's compiled code (a planted .pyc, an import that bypassed the hook) is
tampering. pytest's detailed assertion messages are therefore not in the check's output.

Nothing the code under test can reach holds the guard's state: it lives in the audit hook's
closure; the plugin reports through a generator's `send` (its frame is behind an audited
attribute); wrappers installed into modules are detached (globals of their own, they only ask
the hook, which holds the originals) or have sys.audit and their original bound as code
constants; thread and finalizer callbacks run through a generator's `send`. The plugin also
refuses a run where pytest's, pluggy's, unittest's, the builtins' or this runner's own
functions were replaced (a snapshot taken before repository code runs, compared after
collection, at every test event and at the end), where a test's function, code or parameters
changed after collection, or where a plain test's body was not seen to return; it seals the
references through which module-level code reaches pytest's session and configuration (the
assertion rewriter's `config`/`session`), clears pytest's debugger and assertion globals, and
drops the hidden tests' source from linecache after every report.

What this does NOT guarantee

- Code under test runs in the judged process. Whatever Python exposes without an audit event
  stays reachable to it: a hidden test module's globals and parametrize marks (through
  `sys.modules`, `object.__subclasses__()`, a test-defined callable's `__globals__`), and
  pytest objects behind a reference the sealing does not cover (a conftest that stores its
  config in a global). The static change policy, which refuses such constructs in the
  agent's edits, is the defence there.
- Deferred execution that never runs changed code: a C-level callable (exec, a stdlib
  function) invoked later by the interpreter -- through a hand-built weakref.finalize registry
  entry, a lazy iterator the test consumes, a thread pool started by untouched code -- runs
  with no agent frame on the stack, so only the target rules above apply to it.
- Values whose permissive comparison comes from outside the changed files: a configured
  MagicMock, a repository class that is equal to anything by design. Comparisons made inside
  repository helpers that pytest does not rewrite are not judged.
- The FIFO is open for a few microseconds per event; a thread of a file allowed to use
  threads that writes to every descriptor could slip a forged event in (and the monotone
  events make a forged pass useless unless the real failure is also suppressed).
- Nothing here limits resources or isolation: that is the sandbox's job.
"""
from __future__ import annotations

import _imp
import _signal
import _thread
import ast
import builtins
import gc
import hashlib
import importlib
import importlib.machinery
import json
import linecache
import math  # noqa: F401 - watched by the snapshot: imported before any repository code
import operator
import os
import select
import signal  # noqa: F401 - its handlers go through the guard (_signal.signal is _set_signal)
import sys
import threading
import time
import traceback
import types
import unittest  # noqa: F401 - watched by the snapshot
import unittest.case  # noqa: F401
import unittest.mock
import weakref

import _pytest
import _pytest._argcomplete
import _pytest.outcomes
import _pytest.python
import _pytest.reports
import _pytest.runner
import pluggy  # noqa: F401 - watched by the snapshot
import pytest
from _pytest.config import default_plugins as _DEFAULT_PLUGINS

for _name in _DEFAULT_PLUGINS:  # imported by every run anyway: before any fork, not in each check
    try:
        importlib.import_module("_pytest." + _name)
    except Exception:  # noqa: BLE001 - a plugin this pytest lacks is simply not preloaded
        pass

import faulthandler  # noqa: E402,F401 - imported by every pytest run; preloaded with the plugins
import pdb  # noqa: E402,F401

PRIVATE = ".fixrl-"
"""Every file of the runner in the sandbox has a path component starting with this."""
EVENTS_NAME = ".fixrl-events"
JUNIT_NAME = ".fixrl-junit.xml"
REPORT_NAME = ".fixrl-report.json"
LAUNCHER_PREFIX = ".fixrl-launch-"
FRAME_TAG = "fixrl-check-report"
TAMPER_EXIT = 97
"""Exit status of a judged process the guard stopped."""
EXIT_GRACE = 0.1
"""Seconds the supervisor keeps forwarding output after the judged process exited (for
output its leftover children still write)."""
MAX_REPORT_IDS = 20_000
"""Tests beyond this many are counted, not listed, in the report."""

_TEST_NAMES = ("conftest",)
_TEST_DIRS = ("tests", "test")
_PROTECTED_NAMES = {"conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
                    "sitecustomize.py", "usercustomize.py"}
_PROTECTED_SUFFIXES = (".pyc", ".pyo", ".pth")
_FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"}

_GENERATORS = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_CODE_ATTRS = {"__code__", "gi_code", "cr_code", "ag_code"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PROTECTED_MODULES = ("_thread", "_signal", "_imp")


# ---------------------------------------------------------------- the supervisor

def supervise(args, workdir, pythonpath=(), changed=None, hidden=(), guard=True, own=None):
    """Run pytest with `args` on the working directory in a judged child process; write the
    report (see the module docstring) and print its frame last; the child's exit status.
    `changed`: repository path -> guard categories its original uses; `hidden`: the check's
    own files (repository paths); `guard`: False runs without the audit hook and wrappers
    (only `fixrl bench check` does, to measure what the guard costs); `own`: unchanged
    repository files -> the categories they perform themselves (see `_attribute`)."""
    _make_private(workdir)
    fifo = os.path.join(workdir, EVENTS_NAME)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    hold = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # no EOF between the child's writes
    out_r, out_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the judged process
        code = 70
        try:
            code = _judged(args, workdir, pythonpath, changed or {}, hidden, out_w, guard, own or {})
        except BaseException:  # noqa: BLE001 - the judged run's own crash, shown in its output
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(out_w)
    try:
        events, status = _collect(pid, rfd, out_r)
    finally:
        for fd in (rfd, hold, out_r):
            os.close(fd)
    report = build_report(events, status)
    body = json.dumps(report, sort_keys=True).encode()
    fd = os.open(os.path.join(workdir, REPORT_NAME), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(body)
    sys.stdout.flush()
    sys.stderr.flush()
    _write_all(1, b"\n\x00%s %s %d\x00\n" % (FRAME_TAG.encode(), hashlib.sha256(body).hexdigest().encode(),
                                              len(body)))
    return report["exit_code"]


def _make_private(workdir):
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    os.chmod(workdir, 0o700)
    for name in os.listdir(workdir):  # a launcher script goes as soon as it has been read
        if name.endswith(".py"):
            os.unlink(os.path.join(workdir, name))
    os.mkfifo(os.path.join(workdir, EVENTS_NAME), 0o600)
    # Created here, so nothing else (a FIFO, a link) can stand at the JUnit path when pytest
    # writes it; removing or replacing it is tampering.
    os.close(os.open(os.path.join(workdir, JUNIT_NAME), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:  # non-dumpable: same-uid code cannot open /proc/<supervisor>/fd/1 or ptrace it
        import ctypes  # noqa: PLC0415 - only the supervisor needs it, before any code under test runs

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001 - a forking sandbox's interpreter already is
        pass


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _collect(pid, rfd, out_r):
    """Forward the judged process's output (NUL bytes dropped) and read its events until it
    exited; (events, wait status or None)."""
    events, pending, status, exited_at = [], b"", None, None
    os.set_blocking(out_r, False)
    out_open = True
    wait = 0.0005
    while True:
        fds = [rfd] + ([out_r] if out_open else [])
        # Output open and the process running: wake on what it writes. Its output closed (it is
        # exiting) or it exited (leftovers may still write): poll, soon.
        if out_open and status is None:
            timeout = 0.02
        else:
            timeout, wait = wait, min(wait * 2, 0.01)
        ready, _, _ = select.select(fds, [], [], timeout)
        if rfd in ready:
            pending = _read_events(rfd, pending, events)
        if out_r in ready:
            out_open = _forward(out_r)
        if status is None:
            got, st = os.waitpid(pid, os.WNOHANG)
            if got:
                status, exited_at = st, time.monotonic()
        if status is not None and (not out_open or time.monotonic() - exited_at > EXIT_GRACE):
            _read_events(rfd, pending + b"\n", events)
            return events, status


def _read_events(fd, pending, events):
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        pending += chunk
    *lines, pending = pending.split(b"\n")
    for line in lines:
        if line.strip():
            try:
                events.append(json.loads(line))
            except ValueError:
                events.append({"e": "garbled"})
    return pending


def _forward(fd):
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        return True
    if not chunk:
        return False
    _write_all(1, chunk.replace(b"\x00", b""))
    return True


# ---------------------------------------------------------------- the verdict (pure)

def build_report(events, status):
    """The report from the judged process's events and wait status (see `verdicts`)."""
    tests, order, problems = verdicts(events)
    finish = next((e for e in events if e.get("e") == "finish"), None)
    tamper = [e.get("what", "?") for e in events if e.get("e") == "tamper"] + problems
    if finish:
        tamper += list(finish.get("tamper", []))
    if status is None:
        exit_code = 1
    elif os.WIFEXITED(status):
        exit_code = os.WEXITSTATUS(status)
    else:
        exit_code = 128 + os.WTERMSIG(status)
    if tamper:
        tests = {k: ("tampered" if v == "passed" else v) for k, v in tests.items()}
    listed = dict(list(tests.items())[:MAX_REPORT_IDS])
    return {"tests": listed, "unlisted_passed": sum(v == "passed" for v in list(tests.values())[MAX_REPORT_IDS:]),
            "unlisted": max(len(tests) - MAX_REPORT_IDS, 0), "collected": len(order),
            "finished": finish is not None, "exitstatus": finish.get("exitstatus") if finish else None,
            "exit_code": exit_code, "tamper": tamper[:50]}


def verdicts(events):
    """(nodeid -> outcome, collection order, problems). Events must follow the collection
    order: one setup, then call reports, then one teardown per test; anything else is a
    problem (a forged or replayed event), which makes the run a fail."""
    order, problems, recs = [], [], {}
    position, current = 0, None
    for ev in events:
        kind = ev.get("e")
        if kind == "collected":
            order += [i for i in ev.get("ids", []) if isinstance(i, str)]
        elif kind == "phase":
            nodeid, when = ev.get("id"), ev.get("when")
            if when == "setup":
                try:  # tests that never ran (-x, an interrupted session) have no events
                    position = order.index(nodeid, position) + 1
                except ValueError:
                    problems.append(f"an event for a test that was not next: {nodeid}")
                    continue
                current = nodeid
                recs[nodeid] = {"setup": ev}
            elif current is None or nodeid != current or when not in ("call", "teardown") \
                    or "teardown" in recs[current]:
                problems.append(f"an event out of order: {nodeid} {when}")
            elif when == "call":
                recs[nodeid].setdefault("calls", []).append(ev)
            else:
                recs[nodeid]["teardown"] = ev
        elif kind == "garbled":
            problems.append("an event that is not JSON")
    return {n: phase_verdict(recs.get(n)) for n in order}, order, problems


def phase_verdict(rec):
    """One test's outcome from its phase events (each has kind: null | skipped | xfailed |
    failed, rep: pytest's outcome, wasxfail, and for calls body: returned | raised | ...)."""
    if rec is None:
        return "missing"
    setup, calls, teardown = rec["setup"], rec.get("calls", []), rec.get("teardown")
    if setup.get("kind") == "skipped":
        return "xfailed" if setup.get("wasxfail") else "skipped"
    if setup.get("kind") is not None or setup.get("rep") != "passed":
        return "error"
    if not calls:
        return "missing"
    for call in calls:
        if call.get("wasxfail"):
            return "xfailed" if call.get("kind") is not None else "xpassed"
        if call.get("kind") in ("skipped", "xfailed"):
            return call["kind"]
        if call.get("kind") is not None or call.get("rep") != "passed":
            return "failed"
    if calls[-1].get("needs_body") and calls[-1].get("body") != "returned":
        return "tampered"
    if teardown is None or teardown.get("kind") is not None or teardown.get("rep") != "passed":
        return "error"
    return "passed"


# ---------------------------------------------------------------- the judged process

def _judged(args, workdir, pythonpath, changed, hidden, out_w, guard, own):
    """In the forked child: output to the supervisor's pipe only, the guard, then pytest."""
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    os.closerange(3, 1 << 20)  # the FIFO's ends and every descriptor of the supervisor's
    root = _abspath(os.getcwd(), "/")
    spec = {
        "root": root, "workdir": _abspath(workdir, root),
        "changed": {_abspath(p, root): frozenset(c) for p, c in changed.items()},
        "hidden": {_abspath(p, root) for p in hidden},
        "own": {_abspath(p, root): frozenset(c) for p, c in own.items()},
    }
    plugin = _Plugin()
    plugin.emit = _install_guard(spec, active=guard)
    return _run_pytest(args, pythonpath, plugin)


def _clean_env():
    for key in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        os.environ.pop(key, None)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    sys.dont_write_bytecode = True


def _run_pytest(args, pythonpath, plugin):
    _clean_env()
    sys.path[0:0] = [os.getcwd(), *(_abspath(p, os.getcwd()) for p in pythonpath)]
    sys.argv[0] = pytest.__file__
    code = pytest.main(list(args), plugins=[plugin])
    sys.stdout.flush()
    sys.stderr.flush()
    return int(code)


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


# ---------------------------------------------------------------- the guard

_FUNCTION = type(_abspath)


class _Bound:
    def method(self):
        pass


_METHOD = type(_Bound().method)


def _install_guard(spec, active=True):
    """Install the audit hook and the thread/signal/builtin-module wrappers for `spec` (root,
    workdir, changed: abs path -> categories, hidden: abs paths); the plugin's emitter (a
    generator's `send`). Every function the guard calls runs with a private copy of this
    module's globals, so replacing a module-level name later changes nothing here.
    active=False: the emitter only (a benchmark's baseline)."""
    g = dict(globals())
    g["__builtins__"] = dict(vars(builtins))
    g["operator"] = types.SimpleNamespace(is_=operator.is_, getitem=operator.getitem)
    for name, val in list(g.items()):
        if isinstance(val, _FUNCTION) and val.__globals__ is globals():
            g[name] = _FUNCTION(val.__code__, g, val.__name__, val.__defaults__, val.__closure__)
    st = g["_guard_core"](spec)
    st.active = active
    handlers = g["_rules"](st)
    hook = g["_hook"](st, handlers)
    vault = g["_emitter"](st)
    next(vault)
    if active:
        g["_wrap_modules"]()
        sys.addaudithook(hook)
    return vault.send


def _guard_core(spec):
    """The guard's state and its basic operations, in a namespace only closures hold."""
    st = types.SimpleNamespace(
        root=spec["root"], workdir=spec["workdir"], changed=spec["changed"], hidden=spec["hidden"],
        own=spec.get("own", {}),
        hidden_names={p.rsplit("/", 1)[-1] for p in spec["hidden"]},
        fifo=spec["workdir"] + "/" + EVENTS_NAME, tainted={}, cache={}, thread_taint={}, busy=set(),
        sealed={}, type_cache={}, main=_thread.get_ident(), pid=os.getpid(), gc_depth=0, gc_was=True, builtins={},
        gc_isenabled=gc.isenabled, gc_disable=gc.disable, gc_enable=gc.enable,
        fifo_flags=os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC,
        getframe=sys._getframe, get_ident=_thread.get_ident, getpid=os.getpid, getcwd=os.getcwd, open=os.open,
        write=os.write,
        close=os.close, set_blocking=os.set_blocking, exit=os._exit, fsdecode=os.fsdecode, dumps=json.dumps,
        sinks=_sinks(), plugin_codes=_codes_of([_Plugin]), snapshot=None, any_type=type(unittest.mock.ANY),
        start_thread=_thread.start_new_thread, signal=_signal.signal,
        create_builtin=_imp.create_builtin, exec_builtin=_imp.exec_builtin, finalize_init=weakref.finalize.__init__,
        audit=sys.audit, compile=builtins.compile, only_ast=ast.PyCF_ONLY_AST, fix_locations=ast.fix_missing_locations,
        ast=types.SimpleNamespace(**{k: v for k, v in vars(ast).items() if isinstance(v, type)}),
        stat=os.stat, read=os.read, fspath=os.fspath, read_flags=os.O_RDONLY | os.O_CLOEXEC, produced={},
        verified=set(),
        import_direct=_codes_of(_import_direct()), import_via=_codes_of(_import_via()),
        import_call=_codes_of([importlib._bootstrap._call_with_frames_removed]),
        import_source=_codes_of([importlib._bootstrap_external.SourceLoader.source_to_code]),
        signature_readers=_codes_of(_signature_readers()),
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
    roots = ("_pytest", "pytest", "pluggy", "unittest", "pathlib", "ast", "linecache", __name__)
    out = {}
    for name, mod in list(sys.modules.items()):
        if type(mod) is _MODULE_TYPE and (name.split(".")[0] in roots or name == __name__):
            for val in list(_TYPE_DICT_MODULE(mod).values()):
                if type(val) is type or isinstance(val, type):
                    out[id(val)] = f"{name}.{_TYPE_QUALNAME(val)}"
    return out


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


def _untrusted_cats(st, filename):
    """The categories code from `filename` may use, or None for trusted code (cached)."""
    hit = st.cache.get(filename, st)
    if hit is not st:
        return hit
    cats = st.tainted.get(filename)
    if cats is None and filename[:1] != "<":
        absolute = _abspath(filename, st.root)
        cats = st.changed.get(absolute, st.tainted.get(absolute))
    st.cache[filename] = cats
    return cats


def _attribute(st, frame, cat):
    """Where changed code that may not do `cat` sits on the stack (file:line), or None. The
    walk stops at a stdlib consumer that never hands a frame back (for frames), and, for
    frames only, at an unchanged repository file that reads frames itself (boltons'
    `make_sentinel` names its caller's module, called as a changed module is imported): the
    repository doing what it always did. Not for processes or files: a repository helper
    that runs a command would run the agent's command."""
    sinks = st.sinks if cat == "frames" else ()
    f = frame
    while f is not None:
        code = f.f_code
        if code in sinks:
            return None
        cats = _untrusted_cats(st, code.co_filename)
        if cats is None and cat == "frames" and cat in st.own.get(_abspath(code.co_filename, st.root), ()):
            return None  # not run-time code claiming the file's name: that is tainted, never trusted
        if cats is not None and cat not in cats:
            return f"{_short(st, code.co_filename)}:{f.f_lineno}"
        f = f.f_back
    cats = st.thread_taint.get(st.get_ident())
    if cats is not None and cat not in cats:
        return "a thread started by changed code"
    return None


def _taint_of(st, frame):
    """The categories shared by every changed-code frame on the stack (and this thread's
    taint); None when no changed code is on it."""
    found = st.thread_taint.get(st.get_ident())
    f = frame
    while f is not None:
        cats = _untrusted_cats(st, f.f_code.co_filename)
        if cats is not None:
            found = cats if found is None else found & cats
        f = f.f_back
    return found


def _taint(st, filename):
    st.tainted[filename] = frozenset()
    st.cache.clear()
    st.type_cache.clear()


def _short(st, path):
    return path[len(st.root) + 1:] if path.startswith(st.root + "/") else path


def _send(st, event):
    """Write one event to the FIFO (one open, one write, one close). The caller holds this
    thread's place in st.busy, so the guard does not judge its own open."""
    line = st.dumps(event).encode() + b"\n"
    try:
        fd = st.open(st.fifo, st.fifo_flags)
    except OSError:  # the supervisor is gone: nothing can be reported any more
        return
    try:
        st.set_blocking(fd, True)
        view = memoryview(line)
        while view:
            view = view[st.write(fd, view):]
    finally:
        st.close(fd)


def _tamper(st, what):
    """Report tampering and end the judged process now (its verdict is fail)."""
    _send(st, {"e": "tamper", "what": what})
    try:
        st.write(2, f"\nfixrl check: the guard stopped the run: {what}\n".encode("utf-8", "replace"))
    finally:
        st.exit(TAMPER_EXIT)


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


# While the guard runs (a thread in st.busy, its own events not judged) no code of the agent's
# may run: the garbage collector is off (a finalizer or __del__ would run inside), and the
# guard looks at foreign objects by their type only (no attribute lookup that a class, a
# metaclass or __getattr__ could answer).

def _enter(st, tid):
    st.busy.add(tid)
    st.gc_depth += 1
    if st.gc_depth == 1:
        st.gc_was = st.gc_isenabled()
        st.gc_disable()


def _leave(st, tid):
    st.gc_depth -= 1
    if st.gc_depth == 0 and st.gc_was:
        st.gc_enable()
    st.busy.discard(tid)


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


_CTYPES_EVENTS = ("addressof", "call_function", "cdata", "cdata/buffer", "create_string_buffer",
                  "create_unicode_buffer", "dlopen", "dlsym", "dlsym/handle", "get_errno", "get_last_error",
                  "set_errno", "set_exception", "set_last_error", "string_at", "wstring_at", "PyObj_FromPtr")
_PROCESS_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                   "os.forkpty", "pty.spawn", "os.kill", "os.killpg", "os.startfile")
# audit event -> indexes of its path arguments and what the operation does with each
_PATH_EVENTS = {
    "os.rename": ((0, "write"), (1, "write")), "os.link": ((0, "link"), (1, "write")),
    "os.symlink": ((0, "link"), (1, "write")), "os.remove": ((0, "write"),), "os.rmdir": ((0, "write"),),
    "os.truncate": ((0, "write"),), "os.chmod": ((0, "write"),), "os.chown": ((0, "write"),),
    "os.utime": ((0, "write"),), "os.mkdir": ((0, "mkdir"),), "os.chdir": ((0, "read"),),
    "os.chflags": ((0, "write"),), "os.setxattr": ((0, "write"),), "os.removexattr": ((0, "write"),),
    "shutil.copyfile": ((0, "read"), (1, "write")), "shutil.copymode": ((1, "write"),),
    "shutil.copystat": ((1, "write"),), "shutil.copytree": ((0, "read"), (1, "write")),
    "shutil.move": ((0, "write"), (1, "write")), "shutil.rmtree": ((0, "write"),), "shutil.chown": ((0, "write"),),
    "socket.bind": ((1, "write"),),
}


def _rules(st):
    """audit event -> handler(args, frame) returning why it is tampering (or None)."""
    def category(cat):
        def judge(args, frame):
            who = _attribute(st, frame, cat)
            return f"by {who}" if who else None
        return judge

    rules = {name: category("process") for name in _PROCESS_EVENTS}
    rules.update({"ctypes." + name: category("ctypes") for name in _CTYPES_EVENTS})
    rules.update({name: category("heap") for name in ("gc.get_objects", "gc.get_referrers", "gc.get_referents")})
    rules.update({name: category("frames") for name in ("sys._getframe", "sys._current_frames",
                                                         "sys._current_exceptions")})
    rules.update({"sys.settrace": category("trace"), "sys.setprofile": category("trace")})
    rules["sys.addaudithook"] = lambda args, frame: "adds an audit hook"
    rules["import"] = lambda args, frame: _on_import(st, args, frame)
    rules["open"] = lambda args, frame: _on_open(st, args, frame)
    for name, spots in _PATH_EVENTS.items():
        rules[name] = _path_rule(st, spots)
    rules["object.__getattr__"] = lambda args, frame: _on_getattr(st, args, frame)
    rules["object.__setattr__"] = rules["object.__delattr__"] = lambda args, frame: _on_setattr(st, args, frame)
    for name in ("compile", "exec", "code.__new__", "function.__new__", "marshal.loads"):
        rules[name] = _code_rule(st, name)
    rules.update(_custom_rules(st))
    return rules


_PERMISSIVE_MODULES = frozenset({"unittest.mock", "mock", "pytest_mock"})
"""Modules whose objects can be made equal to anything (mock.ANY, a configured MagicMock)."""


def _on_import(st, args, frame):
    if args and args[0] in _PERMISSIVE_MODULES:
        who = _attribute(st, frame, "mocks")
        return f"{who} imported {args[0]} (objects equal to anything)" if who else None
    return None


def _path_rule(st, spots):
    def judge(args, frame):
        for index, op in spots:
            if index < len(args):
                why = _file_rule(st, args[index], op, frame)
                if why:
                    return why
        return None
    return judge


def _on_open(st, args, frame):
    path, mode, flags = (tuple(args) + (None, None, None))[:3]
    flags = flags if type(flags) is int else 0
    write = bool(flags & _WRITE_FLAGS) or (type(mode) is str and any(c in mode for c in "wax+"))
    return _file_rule(st, path, "write" if write else "read", frame)


_PATH_METHODS = ("__fspath__", "__str__", "__repr__", "__format__", "__getattribute__", "__getattr__")


def _path_text(st, path):
    """(text of a path argument or None, why it may not be looked at): str and bytes as they
    are, an os.PathLike through its __fspath__ only when no class it has gets that (or how it
    prints) from changed code, or from a callable no code shows."""
    kind = type(path)
    if kind is str:
        return path, None
    if kind is bytes:
        return st.fsdecode(path), None
    if issubclass(kind, str):
        return "".join([path]), None
    if issubclass(kind, bytes):
        return st.fsdecode(b"".join([path])), None
    if kind is int or path is None:
        return None, None  # an already open descriptor: judged when it was opened
    for klass in _mro(kind):
        if not _c_type(klass):
            namespace = _type_dict(klass)
            for name in _PATH_METHODS:
                if name in namespace and _odd_method(st, namespace[name], "-"):
                    return None, f"a path object whose {name} comes from changed code ({_TYPE_QUALNAME(klass)})"
    try:
        text = st.fspath(path)
    except TypeError:
        return None, None
    return _path_text(st, text) if type(text) in (str, bytes) else (None, None)


def _file_rule(st, path, op, frame):
    """Why touching `path` (read | write | link | mkdir) from `frame` is tampering, or None."""
    p, why = _path_text(st, path)
    if why or p is None:
        return why
    if "/" + PRIVATE in "/" + p:
        name = p.rsplit("/", 1)[-1]
        if op == "read" and name.startswith(LAUNCHER_PREFIX):
            return None  # the launcher's own source (public, and deleted): tracebacks show it
        if op in ("read", "write", "mkdir") and (name == JUNIT_NAME or _abspath(p, st.getcwd()) == st.workdir):
            who = _attribute(st, frame, "tests")
            return f"{who} touched the check's JUnit report" if who else None  # pytest's junitxml
        return f"touches the check's own files ({p})"
    a = _abspath(p, st.getcwd())
    inside = a.startswith(st.root + "/")
    name = a.rsplit("/", 1)[-1]
    if op != "read" and (a in st.hidden or inside and (
            name in _PROTECTED_NAMES or name.endswith(_PROTECTED_SUFFIXES) or "/__pycache__" in a[len(st.root):])):
        return f"changes {_short(st, a)}"
    hidden = a in st.hidden or name in st.hidden_names
    if hidden and name.endswith((".py", ".pyc")) or _test_like(a, name, inside, st.root):
        who = _attribute(st, frame, "tests")
        if who:
            return f"{who} opened the test file {_short(st, a)}"
    elif op != "read" and name.endswith(".py"):
        who = _attribute(st, frame, "tests") if inside else None
        if who:
            return f"{who} wrote the Python source {_short(st, a)}"
        if not inside and _taint_of(st, frame) is not None:
            _taint(st, a)  # a module written at run time by changed code is changed code
    return None


def _test_like(path, name, inside, root):
    """Test code: a Python source or byte-code file named like a test or a conftest, or inside
    the repository's tests directories. (Data files there are not: tests pass their paths to
    the code under test.)"""
    if name.endswith(".pyc"):
        stem = name.split(".", 1)[0]  # test_x.cpython-311-pytest-9.2.0.pyc
    elif name.endswith(".py"):
        stem = name[:-3]
    else:
        return False
    if stem.startswith("test_") or stem.endswith("_test") or stem in _TEST_NAMES:
        return True
    return inside and any(part in _TEST_DIRS for part in path[len(root) + 1:].split("/")[:-1])


def _on_getattr(st, args, frame):
    obj, name = args[0], args[1]
    if name in _FRAME_ATTRS:
        who = _attribute(st, frame, "frames")
        return f"{who} took a frame ({name})" if who else None
    if name in _CODE_ATTRS:
        if frame.f_code in st.signature_readers:
            return None
        kind = type(obj)
        code = obj.__code__ if kind is _FUNCTION else getattr(obj, name, None) if kind in _GENERATORS else None
        filename = code.co_filename if type(code) is _CODE else ""
        if filename and _is_test_code(st, filename):
            who = _attribute(st, frame, "tests")
            return f"{who} read the code of a test ({name})" if who else None
    return None


def _is_test_code(st, filename):
    a = _abspath(filename, st.root)
    name = a.rsplit("/", 1)[-1]
    return a in st.hidden or name in st.hidden_names or _test_like(a, name, a.startswith(st.root + "/"), st.root)


def _on_setattr(st, args, frame):
    obj, name = args[0], args[1]
    if name == "__code__" and type(obj) is _FUNCTION:
        code = obj.__code__
        if _is_test_code(st, code.co_filename):
            return "replaces the code of a test"
        if any(c is st.audit for c in code.co_consts):
            return "replaces the code of one of the guard's wrappers"
        who = _attribute(st, frame, "exec")
        return f"{who} replaced a function's code" if who else None
    if id(obj) in st.watched_classes:
        who = _attribute(st, frame, "tests")
        return f"{who} changed {st.watched_classes[id(obj)]}.{name}" if who else None
    return None


def _code_rule(st, event):
    """Code made at run time (compile, exec, new code or function objects, marshal) while
    changed code is on the stack becomes changed code itself: its file name is tainted. The
    import system and pytest's rewriter, compiling what they read from disk, are exempt."""
    def judge(args, frame):
        if event == "exec" and type(args[0]) is _CODE and args[0].co_name == "<module>":
            why = _hidden_module_run(st, args[0])
            if why:
                return why
        code = frame.f_code
        if code in st.import_direct or (code in st.import_call and frame.f_back is not None
                                        and frame.f_back.f_code in st.import_via):
            return None
        if event == "compile" and len(args) > 1 and _imported_from_disk(st, frame, args[0], args[1]):
            return None
        if event == "compile":
            filename = args[1] if len(args) > 1 else "<unknown>"
        elif event == "code.__new__":
            filename = args[1]
        elif event == "marshal.loads":
            filename = None
        else:
            filename = args[0].co_filename if type(args[0]) is _CODE else None
        filename = _path_text(st, filename)[0] if filename is not None else None
        if isinstance(filename, str) and filename.startswith("<doctest ") and _doctest_untrusted(st, filename):
            _taint(st, filename)
            return None
        cats = _taint_of(st, frame)
        if cats is not None and "exec" not in cats:
            if filename is None:
                return "loads code objects (marshal) from changed code"
            _taint(st, filename)
        return None
    return judge


def _imported_from_disk(st, frame, source, filename):
    """The import system compiling an unchanged repository file exactly as it is on disk
    (`SourceLoader.source_to_code`): a module that changed code happens to import first is
    still the repository's own, not code made at run time. Source that differs from the file
    (a loader whose get_data changed code supplies) is not."""
    via = frame.f_back
    if frame.f_code not in st.import_call or via is None or via.f_code not in st.import_source:
        return False
    if type(filename) is not str or type(source) not in (bytes, str):
        return False
    path = _abspath(filename, st.root)
    if not path.startswith(st.root + "/") or path in st.changed or path in st.tainted:
        return False
    try:
        data = _read_all(st, path)
    except OSError:
        return False
    return data == (source.encode() if type(source) is str else source)


def _read_all(st, path):
    """A file's bytes, through the guard's own references to os (no code of the agent's)."""
    fd = st.open(path, st.read_flags)
    try:
        chunks = []
        while chunk := st.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        st.close(fd)
    return b"".join(chunks)


def _hidden_module_run(st, code):
    """A hidden test module may only run the code the guard compiled for it."""
    filename = code.co_filename
    if not isinstance(filename, str) or _abspath(filename, st.root) not in st.hidden:
        return None
    if st.produced.get(id(code)) is code:
        st.verified.add(_abspath(filename, st.root))
        return None
    return f"the hidden test module {_short(st, filename)} ran code the check did not compile"


def _doctest_untrusted(st, filename):
    """A doctest example ('<doctest pkg.mod.func[0]>') from a changed module's docstring."""
    name = filename[len("<doctest "):].split("[", 1)[0]
    while name:
        module = sys.modules.get(name)
        path = _TYPE_DICT_MODULE(module).get("__file__") if type(module) is _MODULE_TYPE else None
        if type(path) is str:
            return _untrusted_cats(st, path) is not None
        name = name.rpartition(".")[0]
    return False


def _custom_rules(st):
    """The wrappers' requests (`sys.audit("fixrl.*", ...)`): the guard holds the original
    functions, so nothing else can reach an unguarded one."""
    def start_thread(args, frame):
        function, fargs, fkwargs, box = args
        for hook_name in ("_trace_hook", "_profile_hook"):  # threading.settrace: runs in the new thread
            code = _function_code(_TYPE_DICT_MODULE(st.threading).get(hook_name))
            if code is not None and _untrusted_cats(st, code.co_filename) is not None:
                return "changed code set a trace or profile function for new threads"
        taint = _taint_of(st, frame)
        fkwargs = fkwargs if fkwargs is not None else {}
        if taint is None:
            box.append(st.start_thread(function, fargs, fkwargs))
        else:
            box.append(st.start_thread(_tainted_call(st, function, fargs, fkwargs, taint), (None,)))
        return None

    def finalize(args, frame):
        # weakref.finalize(obj, func, *args): a callback that runs later, anywhere (the GC):
        # registered by changed code, it runs as that code, like a thread it started.
        instance, obj, func, fargs, fkwargs, box = args
        taint = _taint_of(st, frame)
        if taint is None:
            st.finalize_init(instance, obj, func, *fargs, **fkwargs)
        else:
            st.finalize_init(instance, obj, _tainted_call(st, func, fargs, fkwargs, taint), None)
        box.append(True)
        return None

    def set_signal(args, frame):
        signum, handler, box = args
        code = _function_code(handler)
        cats = _untrusted_cats(st, code.co_filename) if code is not None else None
        if cats is not None and "signals" not in cats:
            return "changed code installs a signal handler"
        who = _attribute(st, frame, "signals")
        if who:
            return f"{who} installs a signal handler"
        box.append(st.signal(signum, handler))
        return None

    def builtin(original):
        def judge(args, frame):
            target, box = args
            if type(target) is st.module_spec:
                name = target.name
            elif type(target) is _MODULE_TYPE:
                name = _TYPE_DICT_MODULE(target).get("__name__")
            else:  # the C function would read its attributes: code of the caller's inside the guard
                return "calls _imp with an object that is not a module or a spec"
            if name in _PROTECTED_MODULES and name in sys.modules:
                return f"re-creates the {name} module"
            box.append(original(target))
            return None
        return judge

    return {"fixrl.thread": start_thread, "fixrl.signal": set_signal, "fixrl.finalize": finalize,
            "fixrl.create_builtin": builtin(st.create_builtin), "fixrl.exec_builtin": builtin(st.exec_builtin),
            **_value_rules(st)}


def _value_rules(st):
    """Requests about pytest's objects and the hidden tests' values: the sealed configuration,
    a comparison's operands, compiling a test module."""
    def sealed(args, frame):
        obj, name, value, box = args
        caller = frame.f_back
        if caller is None or caller.f_code not in st.readers:
            return f"reads pytest's {name} through the assertion rewriter"
        store = st.sealed.setdefault(id(obj), {})
        if box is None:
            store[name] = value
        else:
            box.append(store.get(name))
        return None

    def compare(args, frame):
        op, values, box = args
        if any(issubclass(type(v), st.any_type) for v in values):  # what a wrong result cannot be compared as
            return "a test compared unittest.mock.ANY, which is equal to anything"
        why = _odd_value(st, values)
        if why:
            return f"a test compared a value whose {why} comes from changed code"
        box.append(True)
        return None

    def rewrite(args, frame):
        path, config, box = args
        name, why = _path_text(st, path)
        if why or name is None:
            return why or "asks the guard to compile something that is not a path"
        box.append(_compile_test(st, name))
        return None

    return {"fixrl.sealed": sealed, "fixrl.compare": compare, "fixrl.rewrite": rewrite}


def _tainted_call(st, function, args, kwargs, taint):
    """A callable that runs `function(*args, **kwargs)` once as changed code with `taint`'s
    allowances, wherever it is called: the `send` of a generator, so that nothing reachable
    from it (its frame is behind an audited attribute) holds the guard's state."""
    runner = _tainted_run(st, function, args, kwargs, taint)
    return runner.send


def _tainted_run(st, function, args, kwargs, taint):
    ident = st.get_ident()
    before = st.thread_taint.get(ident)
    st.thread_taint[ident] = taint if before is None else before & taint
    try:
        function(*args, **kwargs)
    finally:
        if before is None:
            st.thread_taint.pop(ident, None)
        else:
            st.thread_taint[ident] = before
    yield


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


def _guarded_assert(original):
    """`unittest.TestCase.assert*` that has the guard judge its first two arguments (the values
    compared) before the original runs. Both sys.audit and the original are constants of its
    code: nothing reachable from it (globals, defaults, cells) changes what it calls."""
    module = compile(_UNITTEST_TEMPLATE, "<fixrl-check>", "exec", dont_inherit=True)
    code = next(c for c in module.co_consts if type(c) is _CODE)
    code = code.replace(co_consts=tuple(sys.audit if c == _AUDIT_SENTINEL else original if c == _ORIGINAL_SENTINEL
                                        else c for c in code.co_consts), co_name=original.__name__)
    wrapper = _FUNCTION(code, {"__builtins__": {}}, original.__name__)
    wrapper.__qualname__, wrapper.__doc__ = original.__qualname__, original.__doc__
    return wrapper


def _wrap_unittest():
    case = unittest.case.TestCase
    for name, value in list(vars(case).items()):
        if (name.startswith("assert") or name.startswith("fail") and name != "fail") and isinstance(value, _FUNCTION):
            setattr(case, name, _guarded_assert(value))


def _wrap_modules():
    _wrap_unittest()
    rewrite = importlib.import_module("_pytest.assertion.rewrite")
    rewrite._rewrite_test = _detached(_rewrite_test)
    _thread.start_new_thread = _thread.start_new = threading._start_new_thread = _detached(_start_new_thread)
    _signal.signal = _detached(_set_signal)
    _imp.create_builtin = _detached(_create_builtin)
    _imp.exec_builtin = _detached(_exec_builtin)
    weakref.finalize.__init__ = _detached(_finalize_init)


def _seal(st, obj, names):
    """Move `names` out of `obj` into the guard; afterwards only the code of
    `_pytest.assertion` can read or set them (anyone else reading them is tampering)."""
    cls = type(obj)
    props = {n: property(_detached(_sealed_get, NAME=n), _detached(_sealed_put, NAME=n)) for n in names}
    st.sealed[id(obj)] = {n: obj.__dict__.pop(n) for n in names if n in obj.__dict__}
    obj.__class__ = type(cls.__name__, (cls,), {"__module__": cls.__module__, **props})


# ---------------------------------------------------------------- hidden tests' comparisons

_COMPARE_OPS = ("Eq", "NotEq", "Lt", "LtE", "Gt", "GtE", "In", "NotIn")
_AUDIT_SENTINEL = "\x00fixrl: sys.audit\x00"
"""A constant the compiled test code holds where it calls sys.audit: replaced by the builtin
itself after compiling, so no name lookup (which code under test could redirect) is involved."""
_VALUE_DUNDERS = frozenset({
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__", "__len__", "__contains__",
    "__iter__", "__getitem__", "__float__", "__int__", "__index__", "__complex__", "__abs__", "__round__",
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__instancecheck__", "__subclasscheck__", "__getattr__", "__getattribute__", "__class__"})
"""Dunders that decide what a value compares, hashes or converts to: defined by changed code
that never defined such, they can make a wrong result equal to the expected one."""


def _compile_test(st, path):
    """A test module's or conftest's code as pytest's `_rewrite_test` returns it, (stat, code),
    but compiled by the guard: every one-operator comparison, negation and assert test goes
    through `sys.audit("fixrl.compare", ...)` (which refuses values whose comparison comes
    from changed code), asserts are kept whatever the interpreter's -O, and the module code is
    recorded as the guard's own (a hidden test module run from any other code is tampering).
    pytest's own assertion messages are not added."""
    name = path
    stat = st.stat(name)
    tree = st.compile(_read_all(st, name), name, "exec", st.only_ast, dont_inherit=True)
    tree = _guard_node(st, tree)
    st.fix_locations(tree)
    code = _bind_audit(st, st.compile(tree, name, "exec", dont_inherit=True, optimize=0))
    st.produced[id(code)] = code
    return stat, code


def _guard_node(st, node):
    a = st.ast
    for field in type(node)._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            value[:] = [_guard_node(st, v) if isinstance(v, a.AST) else v for v in value]
        elif isinstance(value, a.AST):
            setattr(node, field, _guard_node(st, value))
    kind = type(node)
    if kind is a.Compare and len(node.ops) == 1 and type(node.ops[0]).__name__ in _COMPARE_OPS:
        return _located(st, _checked(st, [node.left, node.comparators[0]], type(node.ops[0]).__name__,
                                     lambda left, right: a.Compare(left, node.ops, [right])), node)
    if kind is a.UnaryOp and type(node.op) is a.Not:
        node.operand = _located(st, _checked(st, [node.operand], "truth", lambda v: v), node.operand)
    elif kind is a.Assert:
        node.test = _located(st, _checked(st, [node.test], "truth", lambda v: v), node.test)
    return node


def _checked(st, operands, op, result):
    """`(lambda @0, @1: (AUDIT.__call__("fixrl.compare", op, (@0, @1), @b := []), @b[0] and
    RESULT)[1])(operands...)`: the values are judged before the result is computed."""
    a = st.ast
    names = [f"@fixrl{i}" for i in range(len(operands))]
    load = [a.Name(n, a.Load()) for n in names]
    audit = a.Call(a.Attribute(a.Constant(_AUDIT_SENTINEL), "__call__", a.Load()),
                   [a.Constant("fixrl.compare"), a.Constant(op), a.Tuple(load, a.Load()),
                    a.NamedExpr(a.Name("@fixrl_b", a.Store()), a.List([], a.Load()))], [])
    approved = a.Subscript(a.Name("@fixrl_b", a.Load()), a.Constant(0), a.Load())
    body = a.Subscript(a.Tuple([audit, a.BoolOp(a.And(), [approved, result(*[a.Name(n, a.Load()) for n in names])])],
                               a.Load()), a.Constant(1), a.Load())
    params = a.arguments([], [a.arg(n) for n in names], None, [], [], None, [])
    return a.Call(a.Lambda(params, body), operands, [])


def _located(st, new, like):
    for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
        if hasattr(like, attr):
            setattr(new, attr, getattr(like, attr))
    return new


def _bind_audit(st, code):
    consts = tuple(st.audit if type(c) is str and c == _AUDIT_SENTINEL else
                   _bind_audit(st, c) if type(c) is _CODE else c for c in code.co_consts)
    return code.replace(co_consts=consts)


def _builtins_replaced(st):
    """Builtins that changed code replaced by its own functions (tests' own monkeypatching of
    builtins, with their functions or mocks, is theirs)."""
    now = vars(builtins)
    return [f"builtins.{k}" for k, v in list(now.items())
            if st.builtins.get(k) is not v and _changed_function(st, v)]


def _changed_function(st, value):
    code = _function_code(value)
    return code is not None and _untrusted_cats(st, code.co_filename) is not None


def _odd_value(st, values, budget=10_000):
    """The first value (containers' items included, up to `budget` of them) whose type gets
    a value dunder from changed code not allowed to define them: 'Class.__eq__ (file)'."""
    todo = list(values)
    while todo and budget > 0:
        budget -= 1
        value = todo.pop()
        tp = type(value)
        why = st.type_cache.get(tp, st)
        if why is st:
            why = st.type_cache[tp] = _odd_type(st, tp)
        if why:
            return why
        if tp in (list, tuple, set, frozenset):
            todo += list(value)[:budget]
        elif tp is dict:
            todo += list(value.keys())[:budget] + list(value.values())[:budget]
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


def _odd_type(st, tp):
    for klass in _mro(tp):
        if _c_type(klass):
            continue
        namespace = _type_dict(klass)
        for name in _VALUE_DUNDERS & namespace.keys():
            why = _odd_method(st, namespace[name], "dunders")
            if why:
                return f"{_TYPE_QUALNAME(klass)}.{name} ({why})"
    return None


def _odd_method(st, fn, cat):
    """Why a class attribute `fn` is changed code's (or a callable no code shows), or None."""
    if fn is None or type(fn) in _C_SLOTS and _c_type(fn.__objclass__):
        return None  # no method, or a C type's own slot re-exposed (AttrDict's dict.__getitem__, re.Match's)
    code = _function_code(fn)
    if code is None:  # operator.is_not, a partial: a method whose code nobody can see
        return f"{_TYPE_NAME(type(fn))}: not a function"
    cats = _untrusted_cats(st, code.co_filename)
    return _short(st, code.co_filename) if cats is not None and cat not in cats else None


_C_SLOTS = (type(object.__eq__), type(dict.__getitem__), type(int.__add__))
"""wrapper_descriptor, method_descriptor (and their kin): a C type's methods."""


# ---------------------------------------------------------------- the emitter

def _emitter(st):
    """A generator whose `send(event)` is the plugin's only way to report: the event is
    written when it comes from the plugin's own code on the main thread, with no changed code
    on the stack and no thread of changed code running; `{"op": ...}` events are the plugin's
    requests (snapshot, check, purge, seal)."""
    result = None
    while True:
        event = yield result
        caller = st.getframe(1)
        result = None
        tid = st.get_ident()
        _enter(st, tid)
        try:
            if st.getpid() != st.pid:
                continue  # a fork of the judged process (its code's doing) reports nothing
            why = _emit_refusal(st, caller)
            if why:
                _tamper(st, why)
            op = event.get("op") if isinstance(event, dict) else None
            if op is None:
                if st.snapshot and event.get("e") == "phase" and event.get("when") == "call":
                    # pytest's own functions and the builtins, as a test's call is reported:
                    # replaced and put back in between, they would not be seen at the end
                    _request(st, "check", {"where": f"during {event.get('id')}", "pytest_only": True})
                _send(st, event)
            else:
                result = _request(st, op, event)
        finally:
            _leave(st, tid)


def _emit_refusal(st, caller):
    if st.get_ident() != st.main:
        return "a report event came from another thread"
    if caller is None or caller.f_code not in st.plugin_codes:
        return "a report event came from code other than the check's plugin"
    who = _attribute(st, caller, "emit")
    if who:
        return f"a report event was sent with changed code on the stack ({who})"
    running = [t for t, cats in st.thread_taint.items() if "threads" not in cats]
    if running:
        return "a thread started by changed code was still running when the check reported"
    return None


def _request(st, op, event):
    if op == "snapshot":
        st.builtins = dict(vars(builtins))
        groups = _snapshot()
        st.snapshot = (groups, {False: _fast(groups, False), True: _fast(groups, True)})
        return None
    if op == "check":
        pytest_only = event.get("pytest_only", False)
        bad = _diff(st.snapshot, pytest_only) if st.snapshot else ["no snapshot was taken"]
        if pytest_only:
            bad += _builtins_replaced(st)
        if bad:
            _send(st, {"e": "tamper", "what": "the test machinery (pytest, unittest or builtins) was modified: "
                       + ", ".join(bad[:5]) + f" ({event.get('where', '?')})"})
        return bool(bad)
    if op == "purge":
        cache = linecache.cache
        if type(cache) is not dict:
            _send(st, {"e": "tamper", "what": "linecache.cache was replaced"})
            return None
        for key in [k for k in list(cache) if type(k) is str and _is_test_code(st, k)]:
            cache.pop(key, None)
        return None
    if op == "verify" and st.active:  # every collected hidden test module ran the code the guard compiled
        missing = sorted(f for f in (_abspath(f, st.root) for f in event.get("files", ()))
                         if f in st.hidden and f not in st.verified)
        if missing:
            _send(st, {"e": "tamper", "what": "hidden test modules were not compiled by the check: "
                       + ", ".join(_short(st, f) for f in missing[:3])})
        return None
    if op == "seal" and st.active:
        for finder in list(sys.meta_path):
            if type(finder) is st.rewrite_hook and "config" in finder.__dict__:
                _seal(st, finder, ("config", "session"))
        return None
    return None


# ---------------------------------------------------------------- the snapshot of the test machinery

_WATCH_ROOTS = ("_pytest", "pytest", "pluggy", "unittest", "iniconfig")
_WATCH_EXACT = ("builtins", "math", "operator", __name__)
_PYTEST_ROOTS = ("_pytest", "pytest", "pluggy", __name__)
_SKIP_ATTRS = {"__dict__", "__weakref__", "__doc__", "__annotations__", "__parameters__",
               "__abstractmethods__", "_abc_impl"}


def _watched():
    for name, mod in list(sys.modules.items()):
        if mod is None or not hasattr(mod, "__dict__"):
            continue
        if name in _WATCH_EXACT or name.split(".")[0] in _WATCH_ROOTS:
            yield name, mod


def _is_code(val):
    return callable(val) or type(val) in (property, classmethod, staticmethod)


def _is_descriptor(val):
    return any("__get__" in _type_dict(k) for k in _mro(type(val)))


def _snapshot():
    """Per namespace (a module's dict, a class's live __dict__ proxy): the names and objects of
    its functions, classes and descriptors, compared by identity later with C-level loops."""
    groups, seen = [], set()
    for name, mod in _watched():
        side = name.split(".")[0] in _PYTEST_ROOTS or name == __name__
        ns = vars(mod)
        keys = tuple(k for k, v in list(ns.items()) if callable(v) or isinstance(v, type))
        groups.append((ns, keys, tuple(map(ns.get, keys)), name, side, None))
        for val in list(ns.values()):
            if isinstance(val, type) and getattr(val, "__module__", None) == name and id(val) not in seen:
                seen.add(id(val))
                proxy = val.__dict__
                keys = tuple(k for k, v in list(proxy.items()) if k not in _SKIP_ATTRS and _is_code(v))
                groups.append((proxy, keys, tuple(map(proxy.get, keys)), name + "." + val.__qualname__, side,
                               frozenset(proxy.keys())))
    return groups


def _fast(groups, pytest_only):
    """Flat tuples for a C-speed identity check of every watched name at once."""
    chosen = [g for g in groups if g[4] or not pytest_only]
    nss = tuple(g[0] for g in chosen for _ in g[1])
    keys = tuple(k for g in chosen for k in g[1])
    vals = tuple(v for g in chosen for v in g[2])
    proxies = tuple(g[0] for g in chosen if g[5] is not None)
    return nss, keys, vals, proxies, [len(g[5]) for g in chosen if g[5] is not None]


def _diff(snap, pytest_only):
    # pytest_only: the per-test check looks at pytest's, pluggy's and this runner's code only,
    # because tests legitimately monkeypatch builtins (input, open) in fixtures of any scope
    # (the builtins are looked at for changed code's functions separately).
    groups, fast = snap
    nss, keys, vals, proxies, lens = fast[pytest_only]
    try:
        if all(map(operator.is_, map(operator.getitem, nss, keys), vals)) and list(map(len, proxies)) == lens:
            return []
    except KeyError:
        pass
    bad = []
    for ns, keys, vals, label, side, keyset in groups:
        if pytest_only and not side:
            continue
        now = tuple(map(ns.get, keys))
        if not all(map(operator.is_, now, vals)):
            bad += [label + "." + k for k, a, b in zip(keys, now, vals) if a is not b]
        if keyset is not None and len(ns) != len(keyset):
            bad += [label + "." + k + " (added)" for k in ns.keys() - keyset
                    if _is_code(ns[k]) or _is_descriptor(ns[k])]
    return bad


# ---------------------------------------------------------------- the plugin

_Skipped = _pytest.outcomes.Skipped
_XFailed = _pytest.outcomes.XFailed
_Function = _pytest.python.Function
_FUNCTION_RUNTEST = _Function.__dict__["runtest"]


class _Plugin:
    """Sends pytest's progress to the supervisor through `emit` (the guard's emitter; None in
    a warm-up run, which reports nothing). Outcomes come from `call.excinfo`, not from the
    report object, which hooks can rewrite."""

    def __init__(self):
        self.emit = None
        self.items = {}
        self.bodies = {}

    def _send(self, event):
        if self.emit is not None:
            return self.emit(event)
        return None

    @pytest.hookimpl
    def pytest_load_initial_conftests(self, early_config):
        # After pytest's own early class patches, before the first conftest is imported: the
        # last moment before repository code can run.
        self._send({"op": "snapshot"})
        self._send({"op": "seal"})

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):
        debugging = sys.modules.get("_pytest.debugging")
        if debugging is not None:  # the debugger's class-level references to the configuration
            debugging.pytestPDB._config = debugging.pytestPDB._pluginmanager = None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        ids = [item.nodeid for item in session.items]
        chunk, size = [], 0
        for nodeid in ids:  # events stay well under a pipe's atomic write size
            if chunk and size + len(nodeid) > 3000:
                self._send({"e": "collected", "ids": chunk})
                chunk, size = [], 0
            chunk.append(nodeid)
            size += len(nodeid) + 4
        self._send({"e": "collected", "ids": chunk})
        for item in session.items:
            obj = getattr(item, "obj", None) if isinstance(item, _Function) else None
            params = dict(getattr(getattr(item, "callspec", None), "params", {}) or {})
            self.items[item.nodeid] = (obj, getattr(obj, "__code__", None), params)
        self._send({"op": "verify", "files": sorted({str(item.path) for item in session.items
                                                     if isinstance(item, _Function)})})
        self._send({"op": "check", "where": "after collection"})
        self._send({"op": "purge"})

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        util = sys.modules.get("_pytest.assertion.util")
        if util is not None:  # set by pytest for each test; they lead to its configuration
            util._config = util._reprcompare = util._assertion_pass = None

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        original = pyfuncitem.obj
        state = self.bodies[pyfuncitem.nodeid] = ["not entered"]
        recorded = self.items.get(pyfuncitem.nodeid)
        params = dict(getattr(getattr(pyfuncitem, "callspec", None), "params", {}) or {})
        if recorded is None or recorded[0] is not original or getattr(original, "__code__", None) is not recorded[1] \
                or params.keys() != recorded[2].keys() or any(params[k] is not recorded[2][k] for k in params):
            state[0] = "changed after collection"

        def _body(*args, **kwargs):
            if state[0] == "not entered":
                state[0] = "entered"
            result = original(*args, **kwargs)
            if state[0] == "entered":
                state[0] = "returned"
            return result

        pyfuncitem.obj = _body
        try:
            yield
        finally:
            pyfuncitem.obj = original

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        exc = call.excinfo
        if exc is None:
            kind = None
        elif issubclass(exc.type, _Skipped):
            kind = "skipped"
        elif issubclass(exc.type, _XFailed):
            kind = "xfailed"
        else:
            kind = "failed"
        try:
            rep = outcome.get_result()
            rep_outcome, wasxfail = rep.outcome, hasattr(rep, "wasxfail")
        except BaseException:  # noqa: BLE001 - a report that cannot be made is an error
            rep_outcome, wasxfail = "error", False
        event = {"e": "phase", "id": item.nodeid, "when": call.when, "kind": kind, "rep": rep_outcome,
                 "wasxfail": wasxfail}
        if call.when == "call":
            # Plain Python test functions run through pytest_pyfunc_call, so their body must
            # have been seen to return; unittest and doctest items have their own runtest.
            event["needs_body"] = isinstance(item, _Function) and getattr(type(item), "runtest", None) \
                is _FUNCTION_RUNTEST
            event["body"] = self.bodies.get(item.nodeid, ["not entered"])[0]
        self._send(event)
        self._send({"op": "purge"})  # pytest read the test's source to report it

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        self._send({"op": "check", "where": "at session end"})
        self._send({"e": "finish", "exitstatus": int(exitstatus)})


# ---------------------------------------------------------------- a forking sandbox's warm-up

def _before_fork():
    """In a forking sandbox's interpreter, once: a whole pytest session on a throwaway test
    (one pass, one failure) in a temporary directory, without the guard, so that what pytest
    builds lazily on first use (imports, compiled patterns, inspect's module index) is built
    before the fork, not in every check. No repository code runs: the directory is ours, and
    everything the session changed in this process is put back."""
    import shutil  # noqa: PLC0415 - stdlib, only for the warm-up
    import tempfile  # noqa: PLC0415

    path, meta_path, modules, argv = list(sys.path), list(sys.meta_path), set(sys.modules), list(sys.argv)
    cwd, environ = os.getcwd(), dict(os.environ)
    tmp = tempfile.mkdtemp(prefix="fixrl-warm-")
    try:
        os.mkdir(os.path.join(tmp, "t"))
        with open(os.path.join(tmp, "t", "test_fixrl_warm.py"), "w") as f:
            f.write("def test_pass():\n    assert [1] == [1]\n\n\ndef test_fail():\n    assert {1: 2} == {1: 3}\n")
        os.chdir(tmp)
        _run_pytest(["-q", "t/test_fixrl_warm.py", "-p", "no:cacheprovider", "--junitxml=" + tmp + "/j.xml"],
                    (), _Plugin())
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)
        sys.path[:], sys.meta_path[:], sys.argv[:] = path, meta_path, argv
        for name in set(sys.modules) - modules:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(tmp):
                del sys.modules[name]
        os.environ.clear()
        os.environ.update(environ)


def launch(config_json):
    """The one-shot launcher's entry: `python LAUNCHER CONFIG_JSON` (see tasks.check.run)."""
    config = json.loads(config_json)
    here = _abspath(config["workdir"], os.getcwd())
    sys.path[:] = [p for p in sys.path if _abspath(p or ".", os.getcwd()) != here]  # the launcher's directory
    return supervise(**config)


_watched_classes()  # once, at import: a forking sandbox's interpreter does it before it forks

"""The plugin's only way to report (the emitter) and the snapshot of the test machinery it
compares against at every test event."""
from __future__ import annotations

import _collections_abc  # noqa: F401 - the core standard library below, watched by the snapshot
import abc  # noqa: F401
import builtins
import collections  # noqa: F401
import copy  # noqa: F401
import datetime
import difflib  # noqa: F401
import enum  # noqa: F401
import functools  # noqa: F401
import linecache
import math  # noqa: F401 - watched by the snapshot: imported before any repository code
import operator
import pprint  # noqa: F401
import reprlib  # noqa: F401
import sys
import time
import types  # noqa: F401
import weakref  # noqa: F401

import pluggy  # noqa: F401 - watched by the snapshot

from .base import _CORE, _abspath, _c_type, _function_code, _mro, _own, _type_dict
from .core import _attribute, _code_cats, _enter, _is_test_code, _leave, _send, _short, _tamper
from .values import _builtins_replaced
from .wrappers import _seal


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
        st.snapshot = (groups, _tables(groups))
        return None
    if op == "check":
        st.collected = True
        pytest_only = event.get("pytest_only", False)
        bad = _diff(st.snapshot, pytest_only, st) if st.snapshot else ["no snapshot was taken"]
        if pytest_only:
            bad += _builtins_replaced(st)
        if bad:
            _send(st, {"e": "tamper", "what": "the test machinery (pytest, unittest or builtins) was modified: "
                       + ", ".join(bad[:5]) + f" ({event.get('where', '?')})"})
        else:
            _settled(st, pytest_only)
        return bool(bad)
    if op in ("mark", "adopt") and (st.collected or not _configuring(st)):
        # only while pytest itself configures its plugins, never again (a bracketed configure
        # called back later, by whatever path, adopts nothing)
        _send(st, {"e": "tamper", "what": f"the guard was asked to {op} machinery changes outside "
                                          "pytest's configuration"})
        return None
    if op == "mark":  # an environment plugin's pytest_configure is about to run (plugin.py)
        st.marked = _changes(st.snapshot[0]) if st.snapshot else None
        return None
    if op == "adopt":  # ... and has run: what it changed is the machinery from now on
        if st.snapshot and st.marked is not None:
            groups = _adopted(st.snapshot[0], st.marked)
            st.snapshot = (groups, _tables(groups))
        st.marked = None
        return None
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
_WATCH_EXACT = ("builtins", "math", "operator")
_PYTEST_ROOTS = ("_pytest", "pytest", "pluggy")
_SKIP_ATTRS = {"__dict__", "__weakref__", "__doc__", "__annotations__", "__parameters__",
               "__abstractmethods__", "_abc_impl"}


def _watched():
    for name, mod in list(sys.modules.items()):
        if mod is None or not hasattr(mod, "__dict__"):
            continue
        if name in _WATCH_EXACT or name in _CORE or name.split(".")[0] in _WATCH_ROOTS or _own(name):
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
        core = name in _CORE
        side = core or name.split(".")[0] in _PYTEST_ROOTS or _own(name)
        ns = vars(mod)
        # the core modules: every name, data too (a module global their functions read)
        keys = tuple(k for k, v in list(ns.items()) if core or callable(v) or isinstance(v, type))
        groups.append((ns, keys, tuple(map(ns.get, keys)), name, side, frozenset(ns.keys()) if core else None))
        for val in list(ns.values()):
            if isinstance(val, type) and getattr(val, "__module__", None) == name and id(val) not in seen:
                seen.add(id(val))
                proxy = val.__dict__
                keys = tuple(k for k, v in list(proxy.items()) if k not in _SKIP_ATTRS and _is_code(v))
                groups.append((proxy, keys, tuple(map(proxy.get, keys)), name + "." + val.__qualname__, side,
                               frozenset(proxy.keys())))
    return groups


def _core(label):
    return any(label == m or label.startswith(m + ".") for m in _CORE)


def _chosen(groups, which):
    """The groups a check looks at: every one (False), pytest's side and the core standard
    library (True), the core standard library alone ("core": what a comparison runs)."""
    if which == "core":
        return [g for g in groups if _core(g[3])]
    return [g for g in groups if g[4] or not which]


def _tables(groups):
    return {which: _fast(groups, which) for which in (False, True, "core")}


def _fast(groups, which):
    """Flat tuples for a C-speed identity check of every watched name at once."""
    chosen = _chosen(groups, which)
    nss = tuple(g[0] for g in chosen for _ in g[1])
    keys = tuple(k for g in chosen for k in g[1])
    vals = tuple(v for g in chosen for v in g[2])
    proxies = tuple(g[0] for g in chosen if g[5] is not None)
    return nss, keys, vals, proxies, [len(g[5]) for g in chosen if g[5] is not None]


_CLOCK_OBJECTS = (time.time, time.time_ns, time.perf_counter, time.perf_counter_ns, time.monotonic,
                  time.monotonic_ns, time.process_time, time.localtime, time.gmtime, time.strftime,
                  datetime.datetime, datetime.date)
_CLOCKS = frozenset(map(id, _CLOCK_OBJECTS))
"""The standard clocks, taken before any repository code runs (the tuple keeps the ids valid).
pytest holds its own references to them (`_pytest.timing`, `_pytest.logging.datetime`) for
durations and log timestamps; a time-faking test library (freezegun) swaps every module's
reference while a test runs, pytest's included."""


def _trusted_clock(st, val):
    """Whether `val`, found where a standard clock was, is made of trusted code only (no
    changed code): a function, or a class whose own and whose metaclass's functions all are
    (freezegun's `fake_time`, `FakeDatetime`). A faked clock changes reported durations and
    timestamps, never an outcome; a stand-in of changed code would run inside pytest's runner,
    so that stays tampering. Read by type only, like the rest of the guard."""
    code = _function_code(val)
    if code is not None:
        return _code_cats(st, code) is None
    if not any(k is type for k in _mro(type(val))):  # `is`: a metaclass's __eq__ would be changed code run here
        return False
    classes = (*_mro(val), *_mro(type(val)))
    for klass in classes:
        if _c_type(klass):
            continue
        for member in list(_type_dict(klass).values()):
            code = _function_code(member)
            if code is None and not _c_type(type(member)) and not any(type(member) is k for k in classes):
                return False  # an object of another Python class (`FakeDatetime.min` is one of its own): not trusted
            if code is not None and _code_cats(st, code) is not None:
                return False
    return True


def _configuring(st):
    """Whether pytest's `Config._do_configure` is on the stack (it runs once per session)."""
    frame = st.getframe(0)
    while frame is not None:
        if frame.f_code is st.configure_code:
            return True
        frame = frame.f_back
    return False


def _machinery_changed(st):
    """Why the guard must not decide a comparison now: the core standard library (`_CORE`),
    which the comparison runs, differs from the snapshot; None when intact (the common case: a
    C-speed identity check of its names alone)."""
    if not st.snapshot:
        return None
    bad = _diff(st.snapshot, "core", st)  # pytest's own are checked after each test's call
    if not bad:
        _settled(st, "core")
        return None
    return "the test machinery (pytest or the standard library it compares with) was modified: " + ", ".join(bad[:5])


def _settled(st, pytest_only):
    """After a check that found nothing: names a watched namespace gained that are no code
    (`__warningregistry__`, a submodule) join the snapshot, value and all, so that the next
    check takes the C-speed path again instead of walking every namespace -- and a name set to
    data first and to code later is a replaced name, not a settled one."""
    groups, fast = st.snapshot
    _nss, _keys, _vals, proxies, lens = fast[pytest_only]
    if list(map(len, proxies)) == lens:
        return  # the common case, at every comparison: C speed, no walk over the groups
    chosen = {id(g) for g in _chosen(groups, pytest_only)}
    checked = [g[5] is not None and id(g) in chosen for g in groups]
    out = []
    for (ns, keys, vals, label, side, keyset), c in zip(groups, checked):
        new = sorted(k for k in ns.keys() - keyset if type(k) is str) if c else ()
        out.append((ns, keys + tuple(new), vals + tuple(ns[k] for k in new), label, side,
                    frozenset(ns.keys()) if c else keyset))
    st.snapshot = (out, _tables(out))


def _changes(groups):
    """(group index, name) of every watched name that differs from the snapshot now: replaced,
    removed, or added code."""
    out = set()
    for i, (ns, keys, vals, _label, _side, keyset) in enumerate(groups):
        out.update((i, k) for k, v in zip(keys, vals) if ns.get(k, _MISSING) is not v)
        if keyset is not None:
            out.update((i, k) for k in ns.keys() - keyset if _is_code(ns[k]) or _is_descriptor(ns[k]))
    return out


def _adopted(groups, before):
    """`groups` with the changes made since `before` (a `_changes` result) taken as the
    snapshot's own; changes that were there before stay changes."""
    now = _changes(groups) - before
    out = []
    for i, (ns, keys, vals, label, side, keyset) in enumerate(groups):
        mine = {k for j, k in now if j == i}
        if not mine:
            out.append((ns, keys, vals, label, side, keyset))
            continue
        old = dict(zip(keys, vals))
        kept = [k for k in keys if k not in mine or k in ns] + sorted(k for k in mine - old.keys() if k in ns)
        if keyset is not None:  # what was added before stays added
            keyset = frozenset(ns.keys()) - {k for j, k in before if j == i and k not in keyset}
        out.append((ns, tuple(kept), tuple(ns[k] if k in mine else old[k] for k in kept), label, side, keyset))
    return out


_MISSING = object()


def _diff(snap, pytest_only, st=None):
    # pytest_only: the per-test check looks at pytest's, pluggy's and this runner's code only,
    # because tests legitimately monkeypatch builtins (input, open) in fixtures of any scope
    # (the builtins are looked at for changed code's functions separately).
    # "core": a comparison's check, the core standard library alone (`_chosen`).
    groups, fast = snap
    nss, keys, vals, proxies, lens = fast[pytest_only]
    try:
        if all(map(operator.is_, map(operator.getitem, nss, keys), vals)) and list(map(len, proxies)) == lens:
            return []
    except KeyError:
        pass
    bad = []
    for ns, keys, vals, label, _side, keyset in _chosen(groups, pytest_only):
        now = tuple(map(ns.get, keys))
        if not all(map(operator.is_, now, vals)):
            bad += [label + "." + k for k, a, b in zip(keys, now, vals) if a is not b
                    and not (st is not None and id(b) in _CLOCKS and _trusted_clock(st, a))]
        if keyset is not None and len(ns) != len(keyset):
            bad += [label + "." + k + " (added)" for k in ns.keys() - keyset
                    if _is_code(ns[k]) or _is_descriptor(ns[k])]
    return bad

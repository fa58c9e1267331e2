"""The generator's coverage plugin: per-test function coverage and test selection (inert
unless FIXRL_GEN_COVER or FIXRL_GEN_SELECT asks; `tasks.generate.coverage` says what it records
and what the selection does not guarantee).

Shipped as a file beside the repository copy (`tasks.generate.execute`) and loaded with `-p`:
standard library and pytest only, self-contained (no imports of its package).
"""
import json
import os
import sys
import threading

import pytest

_COVER = os.environ.get("FIXRL_GEN_COVER")
_SELECT = os.environ.get("FIXRL_GEN_SELECT")
_SPAWN = frozenset({"subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.exec", "os.fork",
                    "os.forkpty", "pty.spawn"})
_seen = {"": set()}
_cur = _seen[""]
_ctx = ""
_spawned = set()
_lost = set()
_durations = {}


def _prof(frame, event, arg):
    if event == "call":
        _cur.add(frame.f_code)


def _audit(event, args):
    if event in _SPAWN:
        _spawned.add(_ctx)


def _enter(ctx):
    global _cur, _ctx
    _ctx = ctx
    _cur = _seen.setdefault(ctx, set())


if _COVER:
    sys.addaudithook(_audit)
    threading.setprofile(_prof)
    sys.setprofile(_prof)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if not _COVER:
        yield
        return
    _enter(item.nodeid)
    try:
        yield
    finally:
        if sys.getprofile() is not _prof:  # the test replaced the profiler: its record is partial
            _lost.add(item.nodeid)
            sys.setprofile(_prof)
        _enter("")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_fixture_setup(fixturedef, request):
    # A fixture shared by several tests runs once, inside the first; what it computes serves all.
    if not _COVER or fixturedef.scope == "function":
        yield
        return
    outer = _ctx
    _enter("")
    try:
        yield
    finally:
        _enter(outer)


def pytest_runtest_logreport(report):
    if _COVER:
        _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + float(report.duration or 0.0)


def _selected():
    with open(_SELECT) as f:
        return set(json.load(f))


_WANT = _selected() if _SELECT else None
_WANT_FILES = {n.split("::", 1)[0] for n in _WANT} if _WANT is not None else None


def pytest_ignore_collect(collection_path, config):
    if _WANT_FILES is None or collection_path.suffix != ".py" or not collection_path.is_file():
        return None
    if collection_path.name in ("conftest.py", "__init__.py"):
        return None
    try:
        rel = collection_path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return None
    return True if rel not in _WANT_FILES else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    if _WANT is None:
        return
    keep = [i for i in items if i.nodeid in _WANT]
    drop = [i for i in items if i.nodeid not in _WANT]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _encode(codes, files, index, cwd):
    out = set()
    for code in codes:
        name = code.co_filename
        i = index.get(name)
        if i is None:
            rel = os.path.relpath(name, cwd) if os.path.isabs(name) and name.startswith(cwd + os.sep) else None
            if rel is None or rel.startswith(".fixrl_gen" + os.sep):
                i = -1
            else:
                i = len(files)
                files.append(rel.replace(os.sep, "/"))
            index[name] = i
        if i >= 0:
            out.add((i, code.co_firstlineno))
    return sorted(out)


def pytest_sessionfinish(session, exitstatus):
    if not _COVER:
        return
    sys.setprofile(None)
    threading.setprofile(None)
    files, index, cwd = [], {}, os.getcwd()
    tests = {ctx: _encode(codes, files, index, cwd) for ctx, codes in _seen.items() if ctx}
    data = {"files": files, "tests": tests, "global": _encode(_seen[""], files, index, cwd),
            "spawned": sorted(c for c in _spawned if c), "global_spawn": "" in _spawned,
            "lost": sorted(_lost), "durations": _durations}
    with open(_COVER, "w") as f:
        json.dump(data, f)

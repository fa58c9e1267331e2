"""Test selection for the generator: which tests execute which function.

One run of the test suite with COVER_SOURCE loaded as a pytest plugin (`-p _fixrl_gen_cover`,
with FIXRL_GEN_COVER naming the file to write) records, per test, the code objects of the
repository that ran while the test ran (its setup, call and teardown): a `sys.setprofile`
hook notes each code object on its first call. No `coverage` package is needed, so the same
plugin runs in the Docker image (Debian's python3 and pytest only) and in the local backend.
Code that ran outside any test -- imports at collection, fixtures of a wider scope than a
function -- is recorded as run "at import". `CoverageMap` turns that record into, per
function (a span of lines), the tests that execute it.

The same plugin selects: with FIXRL_GEN_SELECT naming a JSON list of test ids, it skips test
files holding none of them and deselects every other test, so a candidate's run collects and
runs only its covering tests, in the suite's own order.

What the selection does not guarantee -- why a kept bug's check is built from a run of the
whole suite, and why a candidate whose covering tests all pass is only *probably* equivalent:
- code reached in a subprocess is invisible to the profiler: tests that start a process
  (subprocess, os.system, fork, spawn: seen through audit hooks) are put in every selection,
  and a process started outside any test turns selection off (every candidate runs everything);
- a test that replaces the profiler (cProfile, coverage, a debugger) stops the recording:
  such tests go in every selection too;
- state that outlives a test: a value a function computed and cached in one test and that a
  later test reads without calling it, a global changed by one test and read by another;
  a test module's import-time side effects on other tests (unselected modules are not imported);
- code run by `exec` of source text from a repository file is not attributed to that file;
- a selected run skips assertion rewriting (tasks.generate.search): a test whose outcome depends on
  it (one that matches the message of an `assert` in its own module) can pass or fail otherwise
  there than in the whole suite.
A function that runs at import (at collection, or in a session/module/class fixture) is
selected with the whole suite.
"""
from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass, field

COVER_PLUGIN = "_fixrl_gen_cover"
"""The plugin's module name (a file of that name goes beside the repository copy)."""

COVER_SOURCE = r'''
"""fixrl generator: per-test function coverage and test selection (inert unless asked)."""
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
'''


def function_spans(source: str) -> dict[str, tuple[int, int]]:
    """qualname -> (first line, last line) of every function `tasks.generate.mutate.list_functions`
    lists, decorators included (a decorated function's code object starts at its first
    decorator). Nested functions are inside their enclosing function's span."""
    spans: dict[str, tuple[int, int]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                spans[prefix + node.name] = (first, node.end_lineno or node.lineno)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")

    visit(ast.parse(source).body, "")
    return spans


@dataclass
class CoverageMap:
    """Which tests execute which lines' code objects, from COVER_SOURCE's record."""

    lines: dict[str, list[tuple[int, frozenset[str]]]]
    """file -> sorted (first line of a code object, tests that ran it)."""
    at_import: dict[str, list[int]]
    """file -> sorted first lines of code objects that ran outside any test."""
    opaque: frozenset[str]
    """Tests in every selection: they started a process, or replaced the profiler."""
    everything: bool
    """A process was started outside any test: no selection at all."""
    durations: dict[str, float] = field(default_factory=dict)
    """Test id -> seconds its setup, call and teardown took in the recorded run."""

    @classmethod
    def from_record(cls, data: dict) -> CoverageMap:
        files = list(data.get("files", []))
        per_file: dict[str, dict[int, set[str]]] = {}
        for test, pairs in data.get("tests", {}).items():
            for i, line in pairs:
                per_file.setdefault(files[i], {}).setdefault(int(line), set()).add(test)
        at_import: dict[str, list[int]] = {}
        for i, line in data.get("global", []):
            at_import.setdefault(files[i], []).append(int(line))
        return cls(
            lines={f: sorted((ln, frozenset(ts)) for ln, ts in by.items()) for f, by in per_file.items()},
            at_import={f: sorted(ls) for f, ls in at_import.items()},
            opaque=frozenset(data.get("spawned", [])) | frozenset(data.get("lost", [])),
            everything=bool(data.get("global_spawn")),
            durations={k: float(v) for k, v in data.get("durations", {}).items()})

    def runs_at_import(self, file: str, span: tuple[int, int]) -> bool:
        lines = self.at_import.get(file, [])
        i = bisect.bisect_left(lines, span[0])
        return i < len(lines) and lines[i] <= span[1]

    def covering(self, file: str, span: tuple[int, int]) -> frozenset[str] | None:
        """The tests whose run executes code of `span` in `file`, plus the opaque ones; None
        when every test must run (the code runs at import, or selection is off)."""
        if self.everything or self.runs_at_import(file, span):
            return None
        entries = self.lines.get(file, [])
        i = bisect.bisect_left([line for line, _ in entries], span[0])
        tests: set[str] = set()
        while i < len(entries) and entries[i][0] <= span[1]:
            tests |= entries[i][1]
            i += 1
        # An opaque test may reach the function where the profiler cannot see it.
        return frozenset(tests) | self.opaque

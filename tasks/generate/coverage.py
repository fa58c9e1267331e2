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
A function that runs at import (at collection, or in a session/module/class fixture) and in no
test is selected with the whole suite; one that also runs in tests, with those tests
(`CoverageMap.covering` says what that gives up).
"""
from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass, field

from fixrl.sandbox import shipping

COVER_PLUGIN = "_fixrl_gen_cover"
"""The plugin's module name (a file of that name goes beside the repository copy)."""

COVER_SOURCE = shipping.source("generate/cover.py")
"""The plugin's text (`sandbox/inside/generate/cover.py`), written as COVER_PLUGIN's file."""


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
        when every test must run (selection is off, or the code runs at import and in no test).

        Code that runs at import and in tests is selected by those tests: a selected run imports
        the package too, so the mutant's import-time effect happens there as well. What that
        gives up: a mutant whose import-time effect only breaks tests that never call it looks
        equivalent and is skipped -- a lost candidate, never a wrong task (a kept bug's check
        always comes from a whole-suite run). Without it a library that builds objects at
        import (pyparsing's grammars) runs its whole suite for most of its candidates."""
        if self.everything:
            return None
        entries = self.lines.get(file, [])
        i = bisect.bisect_left([line for line, _ in entries], span[0])
        tests: set[str] = set()
        while i < len(entries) and entries[i][0] <= span[1]:
            tests |= entries[i][1]
            i += 1
        if not tests and self.runs_at_import(file, span):
            return None
        # An opaque test may reach the function where the profiler cannot see it.
        return frozenset(tests) | self.opaque

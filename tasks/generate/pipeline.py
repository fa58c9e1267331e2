"""`fixrl tasks generate`: bug-fix tasks from any Python repository with a pytest suite, made the
way SWE-smith makes its procedural bugs.

    fixrl tasks generate --repo DIR --test-cmd "python -m pytest -q" --out SUITE [--max N] [--seed S]
        [--files GLOB...] [--functions NAME...] [--operators OP...] [--exclude-private]
        [--max-per-function K] [-j WORKERS] [--ray auto|ADDRESS]

1. Baseline: the repository's tests run twice in sandboxes; every test must pass (a flaky or
   failing test is an error that names it). A small pytest plugin, put beside the repository
   copy, records each test's outcome and failure (node id, crash message, traceback lines);
   the second run also records which tests run which code (tasks.generate.coverage).
2. Candidates: every single-site mutant (`tasks.generate.mutate`) of every function of the non-test
   files (or of those the targeting flags name), ordered round-robin over modules, over the
   functions of a module and over the families of a function (seeded), so any prefix is spread.
3. Each candidate runs the tests that cover its function, in a pooled sandbox, many at once
   (tasks.generate.search); one that breaks some runs the whole suite once, which decides it. Kept:
   it breaks at least one test and at most `max_broken_frac` of them (a local bug), and its
   function holds fewer than `max_per_function` kept bugs. Dropped: duplicates (same text),
   equivalents (nothing breaks), non-local bugs, timeouts, import errors; not run: functions no
   test covers. Every outcome is journaled (OUT/generate.journal.jsonl): a killed run, run
   again, picks up where it stopped and ends with the suite an uninterrupted run makes.
4. Each kept bug becomes a task: the hidden check runs the broken tests (FAIL_TO_PASS, from the
   whole-suite run) plus a sample of still-passing ones (PASS_TO_PASS) by node id, with the test
   files copied in as check files; the issue describes a symptom from a failing test
   (`tasks.generate.issue_text`); train / heldout are split by function; bug and fix are unified diffs.
5. Every task is validated (`tasks.check.validate`); invalid ones are dropped and counted. A yield
   report (per operator: candidates, tested, broke tests, kept, valid) is printed and saved as
   `generate_report.json` in the suite; progress goes to stderr and to OUT/generate.log.

The suite directory gets `repo/` (the clean repository, unless it is already there),
`suite.yaml` (created, or its `rename_pool` updated), `tasks/generated/*.yaml` and
`checks/generated/`; both generated folders are replaced on every run, so hand-written tasks
elsewhere in the suite are left alone. Tasks are written and validated in a staging folder
(OUT/.generate-stage) and moved into place at the end: a run that fails or is killed leaves the
previous suite as it was.

What this does not guarantee: that a bug is interesting (a kept mutant only breaks tests), nor
that its issue text is a full description (one or two symptoms from the failing tests), nor
that test selection finds every candidate the whole suite would detect (tasks.generate.coverage says
what it cannot see; a candidate it misses is dropped as equivalent, never kept wrongly).
"""
from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import json
import logging
import os
import random
import shlex
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from fixrl.tasks import is_test_path  # the tasks engineer's rule, when present
from fixrl.tasks.check.validate import validate_suite
from fixrl.tasks.format.loader import load_suite_config, load_task, task_defaults
from fixrl.tasks.format.pytest_command import parse_pytest_command
from fixrl.tasks.format.schema import Suite
from fixrl.tasks.generate.coverage import COVER_PLUGIN, COVER_SOURCE, CoverageMap, function_spans
from fixrl.tasks.generate.execute import (
    GEN_DIR,
    PLUGIN,
    JobResult,
    LocalRunner,
    Runner,
    TestJob,
    compile_workspace,
    plugin_source,
    run_job,
)
from fixrl.tasks.generate.issue_text import Failure, Target, issue_for, parse_test_file
from fixrl.tasks.generate.journal import JOURNAL_NAME, Journal, tree_hash
from fixrl.tasks.generate.mutate import OPERATORS, FunctionInfo, list_functions, mutants
from fixrl.tasks.generate.progress import GenProgress
from fixrl.tasks.generate.search import TESTED, Candidate, Search, SearchSettings, run_record, run_status

log = logging.getLogger(__name__)

__all__ = ["generate", "GenerateConfig", "GenerateReport", "GenerateError", "Candidate", "TestRun", "round_robin",
           "split_by_function", "unified_diff", "print_report", "GEN_DIR", "PLUGIN"]

REPORT_NAME = "generate_report.json"
LOG_NAME = "generate.log"
STAGE_DIR = ".generate-stage"
TRASH_DIR = ".generate-trash"
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".tox", ".nox", ".venv",
             "venv", "env", "build", "dist", "node_modules", "site-packages", ".eggs", GEN_DIR}
BASELINE_TIMEOUT = 600.0


class GenerateError(ValueError):
    """Bad input for the generator (a repository without passing tests, a non-pytest command...)."""


# ---------------------------------------------------------------------------------------------
# The pytest plugin that reports each test's outcome and failure as JSON (pytest >= 7)

PLUGIN_SOURCE = plugin_source()


# ---------------------------------------------------------------------------------------------
# Records

@dataclass
class TestRun:
    __test__ = False  # not a pytest test class

    outcomes: dict[str, str]
    failures: dict[str, Failure]
    exit_code: int
    seconds: float
    timed_out: bool = False
    collect_errors: list[str] = field(default_factory=list)


@dataclass
class OpStats:
    candidates: int = 0
    tested: int = 0
    broke: int = 0
    equivalent: int = 0
    not_local: int = 0
    timeout: int = 0
    error: int = 0
    kept: int = 0
    no_issue: int = 0
    selected: int = 0
    valid: int = 0
    invalid: int = 0
    uncovered: int = 0
    """Not run: no test executes the function."""
    capped: int = 0
    """Not run: the function already held --max-per-function kept bugs."""


@dataclass
class GenerateReport:
    repo: str
    out: str
    test_cmd: str
    seed: int
    tests: int = 0
    baseline_seconds: float = 0.0
    files: int = 0
    functions: int = 0
    candidates: int = 0
    tested: int = 0
    broke: int = 0
    kept: int = 0
    selected: int = 0
    valid: int = 0
    invalid: int = 0
    train: int = 0
    heldout: int = 0
    seconds: float = 0.0
    per_op: dict[str, OpStats] = field(default_factory=dict)
    invalid_reasons: dict[str, str] = field(default_factory=dict)
    no_issue_reasons: dict[str, int] = field(default_factory=dict)
    """Why kept bugs got no issue text, with how many."""
    task_ids: list[str] = field(default_factory=list)
    # since issue 22
    selection: bool = True
    """Candidates ran their covering tests (False: the whole suite each)."""
    coverage_seconds: float = 0.0
    functions_covered: int = 0
    functions_at_import: int = 0
    """Functions that run at import: their candidates run the whole suite."""
    functions_uncovered: int = 0
    opaque_tests: int = 0
    """Tests in every selection (they start processes or replace the profiler)."""
    mean_selected_tests: float = 0.0
    full_runs: int = 0
    """Whole-suite runs of candidates in this session (kept bugs' checks come from these)."""
    uncovered: int = 0
    capped: int = 0
    reused: int = 0
    """Outcomes read back from the journal of an earlier, interrupted run."""
    workers: int = 0
    candidates_per_minute: float = 0.0
    """Candidates whose tests ran in this session, per minute of candidate testing."""
    max_per_function: int | None = None
    targets: dict[str, object] = field(default_factory=dict)
    """The targeting flags: files, functions, operators, exclude_private."""
    journal: str = ""
    log: str = ""

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class GenerateConfig:
    """One generator run's settings (the `fixrl tasks generate` flags)."""

    max_tasks: int | None = None
    """At most this many tasks (None: one per kept bug)."""
    seed: int = 0
    """Orders candidates and samples checks, issues and the split."""
    backend: str = "local"
    """Sandbox backend of the test runs and the validation."""
    heldout_frac: float = 1 / 3
    """Share of functions whose tasks go to the heldout split."""
    workers: int | None = None
    """Test runs at once on this machine (default: its CPU count)."""
    max_broken_frac: float = 0.5
    """A mutant breaking more than this share of the tests is not a local bug."""
    pass_to_pass: int = 10
    """Still-passing tests sampled into each check."""
    max_fail_to_pass: int = 25
    """At most this many broken tests in a check."""
    max_turns: int = 8
    """The suite's default turn limit."""
    max_edits: int | None = 1
    """The suite's default edit limit."""
    validate: bool = True
    """Validate every task and drop the invalid ones."""
    repeats: int = 2
    """Validation runs per state."""
    ops: list[str] | None = None
    """Mutation operators (families) to use (None: all)."""
    files: list[str] | None = None
    """Only functions of files matching these globs (relative paths; a folder ending in `/`)."""
    functions: list[str] | None = None
    """Only functions whose name or Class.name matches one of these (globs allowed)."""
    exclude_private: bool = False
    """Leave out functions and methods whose name (or class) starts with `_`."""
    max_per_function: int | None = 2
    """At most this many tasks per function (None: no cap)."""
    select: bool = True
    """Run each candidate's covering tests only (False: the whole suite per candidate)."""
    fork: bool = True
    """Run tests in forks of a ready interpreter where the sandbox can (local backend)."""
    progress: bool = True
    """Show progress on stderr (the log file gets it either way)."""
    progress_every: float = 30.0
    """Seconds between two plain progress lines when stderr is not a terminal."""


# ---------------------------------------------------------------------------------------------
# Repository scanning and targeting

def _is_test_path(path: str) -> bool:
    try:
        return is_test_path(path)
    except ImportError:
        parts = path.split("/")
        name = parts[-1]
        return ("tests" in parts[:-1] or "test" in parts[:-1] or name.startswith("test_")
                or name.endswith("_test.py") or name in ("conftest.py", "setup.py", "noxfile.py"))


def python_files(repo: Path) -> list[str]:
    """Non-test .py files of the repository, relative, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in filenames:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, name), repo).replace(os.sep, "/")
                if not _is_test_path(rel) and name != "setup.py":
                    out.append(rel)
    return sorted(out)


def _copy_repo(src: Path, dest: Path) -> None:
    def ignore(d: str, names: list[str]) -> list[str]:
        return [n for n in names if n in SKIP_DIRS or n.endswith(".pyc")]

    shutil.copytree(src, dest, ignore=ignore, symlinks=True)


def pick_files(files: list[str], globs: list[str] | None) -> list[str]:
    """The files matching any of `globs` (all without); GenerateError for a glob matching none."""
    if not globs:
        return files
    out = set()
    for g in globs:
        hit = {f for f in files if fnmatch.fnmatchcase(f, g) or (g.endswith("/") and f.startswith(g))}
        if not hit:
            shown = ", ".join(files[:8]) + (" ..." if len(files) > 8 else "")
            raise GenerateError(f"--files {g!r} matches none of the {len(files)} non-test .py files ({shown}); "
                                "give paths relative to --repo, e.g. 'pkg/*.py' or 'pkg/'")
        out |= hit
    return sorted(out)


def _is_private(info: FunctionInfo) -> bool:
    return any(part.startswith("_") for part in info.qualname.split("."))


def _wanted(info: FunctionInfo, cfg: GenerateConfig, matched: set[str]) -> bool:
    if info.name.startswith("__") and info.name.endswith("__"):
        return False
    if cfg.exclude_private and _is_private(info):
        return False
    if not cfg.functions:
        return True
    hits = {p for p in cfg.functions if fnmatch.fnmatchcase(info.name, p) or fnmatch.fnmatchcase(info.qualname, p)}
    matched |= hits
    return bool(hits)


@dataclass
class Scan:
    """The repository's candidates and what the later stages need to know of its files."""

    files: list[str]
    """Targeted non-test files."""
    all_files: list[str]
    names: Counter
    """Function name -> definitions in the repository's non-test files."""
    sources: dict[str, str]
    spans: dict[str, dict[str, tuple[int, int]]]
    functions: int = 0
    candidates: list[Candidate] = field(default_factory=list)


def scan(work: Path, cfg: GenerateConfig, report: GenerateReport) -> Scan:
    """Every candidate of the targeted functions (duplicate texts once, first family wins)."""
    all_files = python_files(work)
    files = pick_files(all_files, cfg.files)
    s = Scan(files, all_files, Counter(), {}, {})
    infos: dict[str, list[FunctionInfo]] = {}
    for f in all_files:
        try:
            source = (work / f).read_text(encoding="utf-8")
            infos[f] = list_functions(source)
        except (SyntaxError, UnicodeDecodeError, ValueError) as e:
            log.warning("skipping %s: %s", f, e)
            infos[f] = []
            continue
        s.names.update(i.name for i in infos[f] if not (i.name.startswith("__") and i.name.endswith("__")))
        if f in files:
            s.sources[f], s.spans[f] = source, function_spans(source)
    matched: set[str] = set()
    seen: set[tuple[str, str]] = set()
    for f in files:
        for info in infos[f]:
            if not _wanted(info, cfg, matched) or s.names[info.name] > 1:
                continue  # renaming and the split need a name that means one function
            s.functions += 1
            try:
                ms = mutants(s.sources[f], info.qualname, cfg.ops)
            except (SyntaxError, ValueError, RecursionError) as e:
                log.warning("skipping %s::%s: %s", f, info.qualname, e)
                continue
            for m in ms:
                if (f, m.source) not in seen:
                    seen.add((f, m.source))
                    s.candidates.append(Candidate(f, info.qualname, info.name, m))
                    report.per_op[m.op].candidates += 1
    missing = [p for p in cfg.functions or [] if p not in matched]
    if missing:
        raise GenerateError(f"--functions {', '.join(missing)}: no such function in the chosen files "
                            f"({len(files)}); give a name, Class.method or a glob, e.g. 'parse*'")
    if not s.candidates:
        raise GenerateError(f"{work.name}: no mutable functions found in {len(files)} non-test .py file(s)"
                            + (" matching the targeting flags" if cfg.files or cfg.functions or cfg.ops else ""))
    return s


# ---------------------------------------------------------------------------------------------
# Running the tests

def _pytest_parts(test_cmd: str):
    parsed = parse_pytest_command(test_cmd)
    if parsed is None:
        raise GenerateError(
            f"--test-cmd {test_cmd!r} is not a plain pytest command: the generator needs per-test "
            "results, so give `pytest [args]` or `python -m pytest [args]` (no shell operators; put "
            "other settings in pytest.ini)")
    return parsed


_VALUE_OPTIONS = {"-o", "--override-ini", "-p", "-c", "--config-file", "-k", "-m", "-W", "--pythonwarnings",
                  "--rootdir", "--import-mode", "--confcutdir", "--basetemp", "--ignore", "--ignore-glob",
                  "--deselect", "--maxfail", "--tb", "-r", "--durations", "--capture", "--log-level", "--timeout"}
"""pytest options whose value is the next token (not a test path)."""
_CACHE_SELECTION = {"--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--sw", "--stepwise",
                    "--sw-skip", "--stepwise-skip", "-x", "--exitfirst", "--co", "--collect-only"}
"""Options that choose or stop tests by history or at the first failure: the check runs a fixed list."""


def pytest_options(args: list[str]) -> list[str]:
    """The options of a pytest command line without its test paths (`-o pythonpath=src`,
    `-p no:randomly`, `--import-mode=importlib`: how the tests run, which a check of chosen
    node ids needs as much as the whole-suite run did)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        if token in _CACHE_SELECTION:
            pass
        elif token in _VALUE_OPTIONS and i + 1 < len(args):
            out += [token, args[i + 1]]
            i += 1
        elif token.startswith("-") and token not in ("-q", "--quiet"):
            out.append(token)
        i += 1
    return out


def check_command(test_cmd: str, nodeids: list[str]) -> str:
    """The hidden check: the same interpreter and pytest options running exactly these tests."""
    parsed = _pytest_parts(test_cmd)
    head = parsed.env + [parsed.python] + parsed.python_flags + ["-m", "pytest", "-q"] + pytest_options(parsed.args)
    return " ".join(shlex.quote(t) for t in head + list(nodeids))


def failure_of(nodeid: str, record: dict) -> Failure:
    """The issue writer's view of one failed test, from the plugin's record of it."""
    return Failure.from_record(nodeid, record)


def as_test_run(result: JobResult) -> TestRun | None:
    """A job's run as outcomes and failures; None when pytest wrote no report (the command is
    not pytest, or pytest crashed before the end of the session)."""
    data = result.report
    if data is None:
        if result.timed_out:
            return TestRun({}, {}, result.exit_code, result.seconds, timed_out=True)
        return None
    outcomes: dict[str, str] = {}
    failures: dict[str, Failure] = {}
    for nodeid, t in data.get("tests", {}).items():
        outcomes[nodeid] = t.get("outcome") or "error"
        if outcomes[nodeid] in ("failed", "error"):
            failures[nodeid] = failure_of(nodeid, t)
    return TestRun(outcomes, failures, result.exit_code, result.seconds, result.timed_out,
                   data.get("collect_errors", []))


@dataclass
class Baseline:
    stable: list[str]
    """Tests that passed in both runs."""
    seconds: float
    """The untraced run's seconds."""
    cover: CoverageMap | None
    """Which tests run which code (None: selection off, or nothing was recorded)."""
    cover_seconds: float = 0.0


def baseline(runner: Runner, work: Path, test_cmd: str, cfg: GenerateConfig, journal: Journal,
             progress: GenProgress) -> Baseline:
    """The clean suite, twice (the second run recording coverage), or both read back from the
    journal. When forked runs write no report but fresh interpreters do, `cfg.fork` is turned off."""
    rec, crec = journal.get("baseline"), journal.get("coverage")
    if rec is None or (cfg.select and crec is None):
        results = _baseline_runs(runner, work, test_cmd, cfg)
        if cfg.fork and any(r.report is None and not r.timed_out for r in results):
            plain = _baseline_runs(runner, work, test_cmd, dataclasses.replace(cfg, fork=False))
            if all(r.report is not None for r in plain):
                bad = next(r for r in results if r.report is None)
                log.warning("pytest in a forked interpreter wrote no report, in a fresh one it did: every run "
                            "starts a fresh interpreter (slower). The forked run's output ends: %s", bad.output[-600:])
                cfg.fork = False
            results = plain
        stable = sorted(_check_baseline([as_test_run(r) for r in results], test_cmd, results))
        rec = {"stable": stable, "seconds": round(results[0].seconds, 3), "fork": cfg.fork}
        journal.put("baseline", rec)
        if cfg.select:
            if results[1].cover is None:
                log.warning("the coverage run wrote no record: every candidate runs the whole suite")
            crec = {"data": results[1].cover, "seconds": round(results[1].seconds, 3)}
            journal.put("coverage", crec)
    else:
        cfg.fork = cfg.fork and bool(rec.get("fork", True))
        progress.note("baseline and coverage: read back from the journal")
    cover = CoverageMap.from_record(crec["data"]) if cfg.select and crec and crec.get("data") else None
    return Baseline(list(rec["stable"]), float(rec["seconds"]), cover, float((crec or {}).get("seconds", 0.0)))


def _baseline_runs(runner: Runner, work: Path, test_cmd: str, cfg: GenerateConfig) -> list[JobResult]:
    jobs = [TestJob(test_cmd, BASELINE_TIMEOUT, fork=cfg.fork),
            TestJob(test_cmd, BASELINE_TIMEOUT, cover=cfg.select, fork=cfg.fork)]
    futures = [runner.submit(run_job, work, j, seconds=BASELINE_TIMEOUT + 300) for j in jobs]
    return [f.result() for f in futures]  # a SandboxError here is the run's: nothing to judge yet


def _check_baseline(runs: list[TestRun | None], test_cmd: str, results: list[JobResult] | None = None) -> set[str]:
    if any(r is None for r in runs):
        tail = next((r.output.strip()[-800:] for r in results or [] if r.report is None and r.output.strip()), "")
        raise GenerateError(f"repository without passing tests: `{test_cmd}` wrote no pytest report "
                            "(pytest did not run, or crashed before the end)"
                            + (f"; its output ends:\n{tail}" if tail else ""))
    assert all(r is not None for r in runs)
    first = runs[0]
    if first.timed_out:  # type: ignore[union-attr]
        raise GenerateError(f"repository without passing tests: `{test_cmd}` did not finish in 600 s")
    if first.collect_errors:  # type: ignore[union-attr]
        raise GenerateError(f"repository without passing tests: collection errors in "
                            f"{', '.join(first.collect_errors[:5])}")  # type: ignore[union-attr]
    passed = [{n for n, o in r.outcomes.items() if o == "passed"} for r in runs]  # type: ignore[union-attr]
    if not passed[0]:
        raise GenerateError(f"repository without passing tests: `{test_cmd}` ran "
                            f"{len(first.outcomes)} test(s) and none passed")  # type: ignore[union-attr]
    failing = sorted(n for r in runs for n, o in r.outcomes.items() if o in ("failed", "error"))  # type: ignore[union-attr]
    if failing:
        raise GenerateError(
            f"repository without passing tests: {len(set(failing))} test(s) fail on the unmodified "
            f"repository (e.g. {failing[0]}); fix them or exclude them from --test-cmd "
            f"(e.g. `--deselect {failing[0]}`)")
    flaky = passed[0] ^ passed[1]
    if flaky:
        log.warning("%d test(s) passed in only one of two baseline runs (ignored): %s", len(flaky),
                    ", ".join(sorted(flaky)[:5]))
    return passed[0] & passed[1]


def _classify(c: Candidate, run: TestRun | None, stable: list[str], max_broken_frac: float) -> None:
    """Decide `c` from one whole-suite run (what tasks.generate.search does with run records)."""
    if run is None:
        c.status = "error"
        return
    result = JobResult({"tests": {n: {"outcome": o} for n, o in run.outcomes.items()},
                        "collect_errors": run.collect_errors}, None, run.exit_code, run.seconds, run.timed_out, False)
    status = run_status(run_record(result, stable, True), len(stable), max_broken_frac)
    c.status = "kept" if status == "broke" else status
    if c.status == "kept":
        c.broken = [n for n in stable if run.outcomes.get(n) != "passed"]
        c.failures = {n: run.failures[n] for n in c.broken if n in run.failures}


def plan_selection(cands: list[Candidate], scanned: Scan, base: Baseline, full_timeout: float,
                   report: GenerateReport) -> dict[str, float]:
    """Set each candidate's `select` (its covering stable tests; None: the whole suite) and
    return the seconds each selected run may take (three times what its tests took, plus the
    start-up the baseline showed, plus ten)."""
    timeouts: dict[str, float] = {}
    if base.cover is None:
        return timeouts
    stable = frozenset(base.stable)
    startup = max(0.0, base.seconds - sum(base.cover.durations.get(t, 0.0) for t in base.stable))
    cache: dict[str, frozenset[str] | None] = {}
    for c in cands:
        if c.function not in cache:
            span = scanned.spans.get(c.file, {}).get(c.qualname)
            sel = base.cover.covering(c.file, span) if span is not None else None
            cache[c.function] = None if sel is None else sel & stable
        c.select = cache[c.function]
        if c.select is not None:
            took = sum(base.cover.durations.get(t, 0.0) for t in c.select)
            timeouts[c.key] = min(full_timeout, 10.0 + 3 * (startup + took))
    sels = list(cache.values())
    report.functions_at_import = sum(s is None for s in sels)
    report.functions_uncovered = sum(s is not None and not s for s in sels)
    report.functions_covered = sum(bool(s) for s in sels)
    report.opaque_tests = len(base.cover.opaque)
    return timeouts


# ---------------------------------------------------------------------------------------------
# Ordering, selection and splitting (pure functions of the seed)

def round_robin(cands: list[Candidate], rng: random.Random) -> list[Candidate]:
    """Round-robin over modules, over each module's functions and over each function's families,
    all in seeded order, so that any prefix is spread over all three. The families of
    successive functions start at successive families, so the first candidates differ in family too."""
    fams = sorted({c.mutant.op for c in cands})
    rng.shuffle(fams)
    by_file: dict[str, dict[str, list[Candidate]]] = defaultdict(lambda: defaultdict(list))
    for c in cands:
        by_file[c.file][c.qualname].append(c)
    files = sorted(by_file)
    rng.shuffle(files)
    per_file = []
    for f in files:
        fns = sorted(by_file[f])
        rng.shuffle(fns)
        per_file.append([by_file[f][q] for q in fns])
    streams = []
    for j, group in enumerate(_interleave(per_file)):
        by_op: dict[str, list[Candidate]] = defaultdict(list)
        for c in group:
            by_op[c.mutant.op].append(c)
        for op in by_op:
            rng.shuffle(by_op[op])
        ops = [op for op in fams if op in by_op]
        k = j % len(ops)
        streams.append(_interleave([by_op[op] for op in ops[k:] + ops[:k]]))
    return _interleave(streams)


def _interleave(lists: list[list]) -> list:
    out = []
    for i in range(max((len(x) for x in lists), default=0)):
        out.extend(x[i] for x in lists if i < len(x))
    return out


def split_by_function(functions: list[str], weights: dict[str, int], heldout_frac: float,
                      rng: random.Random) -> set[str]:
    """Functions held out: a seeded subset whose share of tasks is about `heldout_frac`."""
    if heldout_frac <= 0 or len(functions) < 2:
        return set()
    order = sorted(functions)
    rng.shuffle(order)
    total = sum(weights[f] for f in order)
    held: set[str] = set()
    count = 0
    for f in order:
        if count >= heldout_frac * total or len(held) >= len(order) - 1:
            break
        held.add(f)
        count += weights[f]
    return held


# ---------------------------------------------------------------------------------------------
# Writing tasks

def unified_diff(path: str, old: str, new: str) -> str:
    """A git-style unified diff of one file (a/ and b/ prefixes, 3 lines of context)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for line in difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", n=3):
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


class _Dumper(yaml.SafeDumper):
    pass


def _str_presenter(dumper, data):
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_presenter)


def dump_yaml(data) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000)


def _task_id(file: str, name: str, op: str, taken: set[str]) -> str:
    stem = Path(file).stem.strip("_") or "mod"
    base = f"{stem}.{name.strip('_') or 'fn'}.{op}"
    base = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in base)
    tid, k = base, 2
    while tid in taken:
        tid, k = f"{base}-{k}", k + 1
    taken.add(tid)
    return tid


def _changed_lines(old: str, new: str) -> list[str]:
    out = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line[:1] in "+-" and not line.startswith(("+++", "---")):
            out.append(line[1:])
    return out


# ---------------------------------------------------------------------------------------------
# The generator

def generate(repo: Path, test_cmd: str, out: Path, max_tasks: int | None = None, seed: int = 0,
             backend: str = "local", heldout_frac: float = 1 / 3, *, runner: Runner | None = None,
             **options) -> GenerateReport:
    """Generate up to `max_tasks` validated bug-fix tasks from `repo` into the suite `out`.
    `options`: the other GenerateConfig fields. `runner`: where the test runs happen (default:
    a LocalRunner of `workers` sandboxes on this machine; the caller closes one it passes)."""
    cfg = GenerateConfig(max_tasks=max_tasks, seed=seed, backend=backend, heldout_frac=heldout_frac, **options)
    t0 = time.monotonic()
    given = (str(repo), str(out))
    repo, out = _check_inputs(Path(repo), Path(out), test_cmd, cfg)
    workers = runner.width if runner is not None else (cfg.workers or max(1, os.cpu_count() or 1))
    report = GenerateReport(given[0], given[1], test_cmd, seed, workers=workers, selection=cfg.select,
                            max_per_function=cfg.max_per_function, journal=str(out / JOURNAL_NAME),
                            log=str(out / LOG_NAME),
                            targets={"files": cfg.files, "functions": cfg.functions, "operators": cfg.ops,
                                     "exclude_private": cfg.exclude_private})
    report.per_op = {op: OpStats() for op in (cfg.ops or OPERATORS)}
    created = not out.exists()
    existed = {p for p in (out / JOURNAL_NAME, out / LOG_NAME) if p.exists()}
    try:
        _generate(repo, test_cmd, out, cfg, runner, report)
    except GenerateError:
        # Bad input: what this run made goes (a killed or failed run keeps its journal to resume from).
        if created:
            shutil.rmtree(out, ignore_errors=True)
        else:
            for p in {out / JOURNAL_NAME, out / LOG_NAME} - existed:
                p.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(out / STAGE_DIR, ignore_errors=True)
        shutil.rmtree(out / TRASH_DIR, ignore_errors=True)
    report.seconds = round(time.monotonic() - t0, 1)
    _write_atomic(out / REPORT_NAME, json.dumps(report.to_json(), indent=2) + "\n")
    return report


def _generate(repo: Path, test_cmd: str, out: Path, cfg: GenerateConfig, runner: Runner | None,
              report: GenerateReport) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fixrl-gen-") as tmp, \
            GenProgress(out / LOG_NAME, cfg.progress, cfg.progress_every) as progress:
        progress.note(f"fixrl tasks generate: {repo} -> {out} ({test_cmd!r}, seed {cfg.seed}, "
                      f"{report.workers} workers)")
        work = _open_work(repo, Path(tmp))
        journal = Journal(out / JOURNAL_NAME, {"repo": tree_hash(work, {GEN_DIR}), "test_cmd": test_cmd,
                                               "backend": cfg.backend})
        if journal.restarted:
            progress.note(f"the journal {journal.path.name} was started afresh: {journal.restarted}")
        own = runner is None
        runner = runner or LocalRunner(report.workers, backend=cfg.backend)
        try:
            _write_plugins(work)
            scanned, kept, base, rng = _search(runner, work, test_cmd, cfg, journal, progress, report)
        finally:
            if own:
                runner.close()
            journal.close()
        _emit(kept, scanned, base, work, repo, out, test_cmd, cfg, rng, progress, report)
        progress.note(f"done: {report.valid} valid tasks ({report.invalid} invalid)")


def _check_inputs(repo: Path, out: Path, test_cmd: str, cfg: GenerateConfig) -> tuple[Path, Path]:
    repo, out = repo.resolve(), out.resolve()
    if not repo.is_dir():
        raise GenerateError(f"--repo {repo}: not a directory")
    if out == repo or repo in out.parents:
        raise GenerateError(f"--out {out} is inside --repo {repo}: write the suite elsewhere "
                            "(the suite gets its own copy of the repository)")
    if cfg.max_tasks is not None and cfg.max_tasks < 1:
        raise GenerateError(f"--max must be at least 1, got {cfg.max_tasks}")
    if not 0 <= cfg.heldout_frac < 1:
        raise GenerateError(f"--heldout-frac must be in [0, 1), got {cfg.heldout_frac}")
    if cfg.max_per_function is not None and cfg.max_per_function < 1:
        raise GenerateError(f"--max-per-function must be at least 1, got {cfg.max_per_function}")
    for op in cfg.ops or []:
        if op not in OPERATORS:
            raise GenerateError(f"unknown operator {op!r}; known: {', '.join(OPERATORS)}")
    _pytest_parts(test_cmd)
    return repo, out


def _open_work(repo: Path, tmp: Path) -> Path:
    work = tmp / "repo"
    _copy_repo(repo, work)
    return work


def _write_plugins(work: Path) -> None:
    """The generator's plugins beside the repository copy, and the copy byte-compiled
    (gen_exec.compile_workspace: test runs then compile only a mutant's file)."""
    (work / GEN_DIR).mkdir(exist_ok=True)
    (work / GEN_DIR / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    (work / GEN_DIR / f"{COVER_PLUGIN}.py").write_text(COVER_SOURCE, encoding="utf-8")
    compile_workspace(work)


def _search(runner: Runner, work: Path, test_cmd: str, cfg: GenerateConfig, journal: Journal,
            progress: GenProgress, report: GenerateReport) -> tuple[Scan, list[Candidate], Baseline, random.Random]:
    """Stages 1-3: the baseline and coverage, the candidates, and their test runs (and the
    seeded stream, which goes on into the tasks)."""
    scanned = scan(work, cfg, report)
    report.files, report.functions, report.candidates = len(scanned.files), scanned.functions, len(scanned.candidates)
    progress.note(f"{report.candidates} candidates in {report.functions} functions of {report.files} file(s)")
    base = baseline(runner, work, test_cmd, cfg, journal, progress)
    report.tests, report.baseline_seconds, report.coverage_seconds = len(base.stable), round(base.seconds, 3), \
        base.cover_seconds
    report.selection = base.cover is not None
    full_timeout = min(600.0, 5.0 + 3 * base.seconds)
    timeouts = plan_selection(scanned.candidates, scanned, base, full_timeout, report)
    progress.note(f"baseline: {report.tests} tests pass ({base.seconds:.1f} s); " + (
        f"selection: {report.functions_covered} functions covered, {report.functions_at_import} run at import "
        f"(whole suite), {report.functions_uncovered} by no test" if base.cover else "no selection: every "
        "candidate runs the whole suite"))
    rng = random.Random(cfg.seed)
    order = round_robin(scanned.candidates, rng)
    target = None if cfg.max_tasks is None else (3 * cfg.max_tasks) // 2 + 5
    settings = SearchSettings(test_cmd, base.stable, full_timeout, timeouts, target, cfg.max_per_function,
                              cfg.max_broken_frac, cfg.fork)
    search = Search(order, settings, runner, work, journal, progress)
    progress.start(len(order), target, reused=journal.reused)
    kept = search.run()
    report.candidates_per_minute = progress.finish()
    report.full_runs, report.reused = search.full_runs, search.reused
    sizes = search.selected_sizes
    report.mean_selected_tests = round(sum(sizes) / len(sizes), 1) if sizes else 0.0
    for c in order:
        st = report.per_op[c.mutant.op]
        if c.status in TESTED:
            st.tested += 1
            setattr(st, c.status, getattr(st, c.status) + 1)
            st.broke += c.status in ("kept", "not_local")
        elif c.status in ("uncovered", "capped"):
            setattr(st, c.status, getattr(st, c.status) + 1)
    for name in ("tested", "broke", "uncovered", "capped"):
        setattr(report, name, sum(getattr(s, name) for s in report.per_op.values()))
    report.kept = len(kept)
    return scanned, kept, base, rng


def _emit(kept: list[Candidate], scanned: Scan, base: Baseline, work: Path, repo: Path, out: Path, test_cmd: str,
          cfg: GenerateConfig, rng: random.Random, progress: GenProgress, report: GenerateReport) -> None:
    """Stages 4-5: issue texts, the choice and split, the task files and their validation, in
    the staging folder; then the staged suite replaces the generated part of `out`."""
    with_issue = []
    for c in kept:
        c.failures = {n: failure_of(n, rec) for n, rec in c.records.items()}
        issue, why = _issue_for(c, work, scanned.sources[c.file], rng)
        if issue is None:
            report.per_op[c.mutant.op].no_issue += 1
            report.no_issue_reasons[why] = report.no_issue_reasons.get(why, 0) + 1
            continue
        with_issue.append((c, issue))
    stage, config = _prepare_stage(out, repo, scanned.names, test_cmd, cfg, base.seconds)
    chosen = _select(with_issue, cfg.max_tasks, rng)
    fns = sorted({c.function for c, _ in chosen})
    held = split_by_function(fns, Counter(c.function for c, _ in chosen), cfg.heldout_frac, rng)
    check_timeout = float(max(30, round(10 * report.baseline_seconds)))
    written = _write_tasks(chosen, held, stage, work, scanned.sources, test_cmd, cfg.pass_to_pass,
                           cfg.max_fail_to_pass, base.stable, rng, cfg.seed, check_timeout)
    for c, _ in chosen:
        report.per_op[c.mutant.op].selected += 1
    report.selected = len(chosen)
    if cfg.validate and written:
        progress.note(f"validating {len(written)} tasks")
        # Validation runs here (a cluster runner tests candidates only): this machine's workers.
        jobs = cfg.workers or max(1, os.cpu_count() or 1)
        verdicts = _validate(stage, [tid for tid, _ in written], cfg.backend, jobs, cfg.repeats)
        for tid, c in written:
            ok, why = verdicts.get(tid, (False, "not validated"))
            st = report.per_op[c.mutant.op]
            if ok:
                st.valid += 1
            else:
                st.invalid += 1
                report.invalid_reasons[tid] = why
                _remove_task(stage, tid)
    else:
        for _, c in written:
            report.per_op[c.mutant.op].valid += 1
    _publish(stage, out, config)
    report.valid = sum(s.valid for s in report.per_op.values())
    report.invalid = sum(s.invalid for s in report.per_op.values())
    report.task_ids = sorted(tid for tid, _ in written if tid not in report.invalid_reasons)
    ids = set(report.task_ids)
    report.heldout = sum(1 for tid, c in written if tid in ids and c.function in held)
    report.train = len(ids) - report.heldout


def _issue_for(c: Candidate, work: Path, clean: str, rng: random.Random) -> tuple[str | None, str]:
    """(issue text, '') for a kept bug, or (None, why it has none) -- `tasks.generate.issue_text`."""
    parsed: dict[str, object] = {}

    def read(path: str):
        if path not in parsed:
            file = (work / path).resolve()
            try:  # only files of the working copy, whatever a failure record names
                parsed[path] = parse_test_file(file.read_text(encoding="utf-8")) \
                    if file.is_relative_to(work.resolve()) else None
            except (OSError, UnicodeDecodeError):
                parsed[path] = None
        return parsed[path]

    failures = [c.failures[n] for n in c.broken if n in c.failures]
    forbidden = _changed_lines(clean, c.mutant.source)
    return issue_for(failures, read, rng, forbidden, Target(c.name, c.file))


def _select(items: list[tuple[Candidate, str]], max_tasks: int | None, rng: random.Random):
    """Up to max_tasks, spread over modules, functions and families (round-robin, seeded)."""
    order = round_robin([c for c, _ in items], rng)
    issue = {id(c): text for c, text in items}
    chosen = order if max_tasks is None else order[:max_tasks]
    return [(c, issue[id(c)]) for c in chosen]


def _suite_config(out: Path, repo: Path, names: Counter, test_cmd: str, cfg: GenerateConfig,
                  suite_seconds: float = 0.0) -> dict:
    suite_file = out / "suite.yaml"
    config = yaml.safe_load(suite_file.read_text(encoding="utf-8")) if suite_file.exists() else None
    config = config if isinstance(config, dict) else {}
    config.setdefault("name", out.name)
    config.setdefault("description", f"Bug-fix tasks generated from {repo.name} by `fixrl tasks generate`.")
    defaults = config.setdefault("defaults", {})
    defaults.setdefault("repo", "repo")
    defaults.setdefault("public_tests", test_cmd)
    limits = defaults.setdefault("limits", {})
    limits.setdefault("max_turns", cfg.max_turns)
    limits.setdefault("max_edits", cfg.max_edits)
    # The agent's `test` tool runs the whole suite: give it the time the generator's own whole-suite
    # runs get (more-itertools' test_more.py passed the 60 s default only on an idle machine).
    limits.setdefault("tool_timeout", max(60.0, min(600.0, float(round(5 + 3 * suite_seconds)))))
    config["rename_pool"] = sorted(n for n, k in names.items() if k == 1 and not n.startswith("_"))
    return config


def _prepare_stage(out: Path, repo: Path, names: Counter, test_cmd: str,
                   cfg: GenerateConfig, suite_seconds: float) -> tuple[Path, dict]:
    """OUT/.generate-stage: a suite of its own (suite.yaml, repo/, the generated folders) that the
    new tasks are written and validated in; returns it and the suite.yaml `out` will get."""
    stage = out / STAGE_DIR
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir()
    config = _suite_config(out, repo, names, test_cmd, cfg, suite_seconds)
    staged = {**config, "defaults": {**config["defaults"], "repo": "repo"}}
    (stage / "suite.yaml").write_text(dump_yaml(staged), encoding="utf-8")
    if (out / "repo").resolve() == repo:
        (stage / "repo").symlink_to(repo, target_is_directory=True)
    else:
        _copy_repo(repo, stage / "repo")
    for d in (stage / "tasks" / "generated", stage / "checks" / "generated"):
        d.mkdir(parents=True)
    return stage, config


def _publish(stage: Path, out: Path, config: dict) -> None:
    """Move the staged repository, checks and tasks into `out` and write its suite.yaml. At
    every moment the suite's generated tasks are the old ones, none, or the new ones, each with
    its check files in place."""
    trash = out / TRASH_DIR
    if trash.exists():
        shutil.rmtree(trash)
    trash.mkdir()
    for rel in ("tasks/generated", "checks/generated"):
        if (out / rel).exists():
            (out / rel).rename(trash / rel.replace("/", "-"))
    if not (stage / "repo").is_symlink():
        if (out / "repo").exists() or (out / "repo").is_symlink():
            (out / "repo").rename(trash / "repo")
        (stage / "repo").rename(out / "repo")
    for rel in ("checks/generated", "tasks/generated"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (stage / rel).rename(out / rel)
    _write_atomic(out / "suite.yaml", dump_yaml(config))
    shutil.rmtree(trash, ignore_errors=True)
    shutil.rmtree(stage, ignore_errors=True)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _write_tasks(chosen, held: set[str], out: Path, work: Path, sources: dict[str, str], test_cmd: str,
                 n_p2p: int, max_f2p: int, stable: list[str], rng: random.Random, seed: int,
                 check_timeout: float):
    taken: set[str] = set()
    written = []
    check_root = out / "checks" / "generated"
    copied: set[str] = set()
    for c, issue in sorted(chosen, key=lambda x: (x[0].file, x[0].qualname, x[0].mutant.op, x[0].mutant.lineno)):
        tid = _task_id(c.file, c.name, c.mutant.op, taken)
        f2p = sorted(c.broken)
        if len(f2p) > max_f2p:
            f2p = sorted(rng.sample(f2p, max_f2p))
        broken_files = {n.split("::", 1)[0] for n in c.broken}
        passing = [n for n in stable if n not in set(c.broken)]
        near = [n for n in passing if n.split("::", 1)[0] in broken_files]
        far = [n for n in passing if n.split("::", 1)[0] not in broken_files]
        p2p = rng.sample(near, min(len(near), max(0, n_p2p - 2)))
        p2p += rng.sample(far, min(len(far), n_p2p - len(p2p)))
        tests = f2p + sorted(p2p)
        files = {}
        for path in sorted({n.split("::", 1)[0] for n in tests}):
            if path not in copied:
                dest = check_root / "tests" / path
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(work / path, dest)
                copied.add(path)
            files[path] = f"checks/generated/tests/{path}"
        clean, buggy = sources[c.file], c.mutant.source
        (check_root / tid).mkdir(parents=True)
        (check_root / tid / "bug.patch").write_text(unified_diff(c.file, clean, buggy), encoding="utf-8")
        (check_root / tid / "fix.patch").write_text(unified_diff(c.file, buggy, clean), encoding="utf-8")
        task = {
            "id": tid,
            "kind": "fix",
            "split": "heldout" if c.function in held else "train",
            "function": c.name,
            "file": c.file,
            "tags": [f"family:{c.mutant.op}", f"function:{c.name}", "generated"],
            "issue": issue,
            "bug": f"checks/generated/{tid}/bug.patch",
            "fix": f"checks/generated/{tid}/fix.patch",
            "check": {"command": check_command(test_cmd, tests), "tests": tests, "files": files,
                      "timeout": check_timeout},
            "metadata": {"generator": {
                "op": c.mutant.op, "qualname": c.qualname, "lineno": c.mutant.lineno,
                "description": c.mutant.description, "seed": seed,
                "FAIL_TO_PASS": sorted(c.broken), "PASS_TO_PASS": sorted(p2p)}},
        }
        (out / "tasks" / "generated" / f"{tid}.yaml").write_text(dump_yaml(task), encoding="utf-8")
        written.append((tid, c))
    return written


def _remove_task(out: Path, tid: str) -> None:
    (out / "tasks" / "generated" / f"{tid}.yaml").unlink(missing_ok=True)
    shutil.rmtree(out / "checks" / "generated" / tid, ignore_errors=True)


def _validate(out: Path, ids: list[str], backend: str, workers: int, repeats: int) -> dict[str, tuple[bool, str]]:
    """task id -> (valid, why not), by `tasks.check.validate` (check fails on the bug, passes with the
    fix, the same verdict on every repeat, the public tests run)."""

    config = load_suite_config(out)
    loaded = []
    verdicts: dict[str, tuple[bool, str]] = {}
    for tid in ids:
        try:
            loaded.append(load_task(out / "tasks" / "generated" / f"{tid}.yaml", task_defaults(config), out))
        except ValueError as e:
            verdicts[tid] = (False, f"does not load: {e}")
    suite = Suite(dir=out, name=config.name or out.name, tasks=loaded)
    for res in validate_suite(suite, backend=backend, jobs=workers, repeats=repeats):
        verdicts[res.task_id] = (res.ok, "; ".join(res.reasons))
    return verdicts


# ---------------------------------------------------------------------------------------------
# Output

def print_report(report: GenerateReport, console=None) -> None:
    console = console or Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 150))
    table = Table(title=f"fixrl tasks generate: yield ({report.tests} tests, baseline {report.baseline_seconds:.2f} s)")
    cols = ["candidates", "tested", "broke", "equivalent", "not_local", "timeout", "error", "uncovered", "capped",
            "kept", "no_issue", "selected", "valid", "invalid"]
    heads = ["cands", "tested", "broke", "equiv", "nonlocal", "timeout", "error", "uncov", "capped", "kept",
             "no issue", "selected", "valid", "invalid"]
    table.add_column("operator")
    for head in heads:
        table.add_column(head, justify="right")
    for op, st in report.per_op.items():
        table.add_row(op, *(str(getattr(st, col)) for col in cols))
    table.add_row("total", *(str(sum(getattr(s, col) for s in report.per_op.values())) for col in cols), style="bold")
    console.print(table)
    if report.selection:
        console.print(f"test selection: {report.functions_covered} functions covered by some test, "
                      f"{report.functions_at_import} run at import (whole suite), {report.functions_uncovered} by "
                      f"none; {report.mean_selected_tests:g} tests per selected run; {report.full_runs} whole-suite "
                      f"runs; {report.candidates_per_minute:g} candidates/min on {report.workers} workers")
    else:
        console.print(f"every candidate ran the whole suite: {report.candidates_per_minute:g} candidates/min "
                      f"on {report.workers} workers")
    if report.reused:
        console.print(f"{report.reused} outcomes read back from the journal of an earlier run")
    console.print(f"{report.functions} functions in {report.files} files; {report.valid} valid tasks "
                  f"({report.train} train, {report.heldout} heldout) written to {report.out} in {report.seconds:.0f} s")
    for tid, why in sorted(report.invalid_reasons.items()):
        console.print(f"  dropped {tid}: {why}")
    for why, n in sorted(report.no_issue_reasons.items(), key=lambda x: (-x[1], x[0])):
        console.print(f"  no issue for {n} kept bug(s): {why}")

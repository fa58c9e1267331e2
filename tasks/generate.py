"""`fixrl tasks generate`: bug-fix tasks from any Python repository with a pytest suite, made the
way SWE-smith makes its procedural bugs.

    fixrl tasks generate --repo DIR --test-cmd "python -m pytest -q" --out SUITE [--max N] [--seed S]

1. Baseline: the repository's tests run twice in a sandbox; every test must pass (a flaky or
   failing test is an error that names it). A small pytest plugin, put beside the repository
   copy, records each test's outcome and failure (node id, crash message, traceback lines).
2. Candidates: every single-site mutant (`tasks.mutate`) of every function of the non-test
   files, visited round-robin over families and functions (seeded) so any prefix is spread.
3. Each candidate runs the whole test suite in a pooled sandbox (parallel). Kept: it breaks at
   least one test and at most `max_broken_frac` of them (a local bug). Dropped: duplicates (same
   text), equivalents (nothing breaks), non-local bugs, timeouts, import errors.
4. Each kept bug becomes a task: the hidden check runs the broken tests (FAIL_TO_PASS) plus a
   sample of still-passing ones (PASS_TO_PASS) by node id, with the test files copied in as
   check files; the issue describes a symptom from a failing test (`tasks.issue_text`);
   train / heldout are split by function; bug and fix are unified diffs.
5. Every task is validated (`tasks.validate`); invalid ones are dropped and counted. A yield
   report (per operator: candidates, tested, broke tests, kept, valid) is printed and saved as
   `generate_report.json` in the suite.

The suite directory gets `repo/` (the clean repository, unless it is already there),
`suite.yaml` (created, or its `rename_pool` updated), `tasks/generated/*.yaml` and
`checks/generated/`; both generated folders are replaced on every run, so hand-written tasks
elsewhere in the suite are left alone.

What this does not guarantee: that a bug is interesting (a kept mutant only breaks tests), nor
that its issue text is a full description (one or two symptoms from the failing tests).
"""
from __future__ import annotations

import difflib
import json
import logging
import os
import random
import shlex
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fixrl.sandbox import SandboxError, SandboxPool
from fixrl.tasks import is_test_path  # the tasks engineer's rule, when present
from fixrl.tasks.issue_text import Failure, Target, capture_source, issue_for, parse_test_file
from fixrl.tasks.loader import load_suite_config, load_task
from fixrl.tasks.mutate import OPERATORS, Mutant, list_functions, mutants
from fixrl.tasks.pytest_command import parse_pytest_command
from fixrl.tasks.schema import Suite
from fixrl.tasks.validate import validate_suite

log = logging.getLogger(__name__)

GEN_DIR = ".fixrl_gen"
PLUGIN = "_fixrl_gen_plugin"
REPORT_NAME = "generate_report.json"
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".tox", ".nox", ".venv",
             "venv", "env", "build", "dist", "node_modules", "site-packages", ".eggs", GEN_DIR}


class GenerateError(ValueError):
    """Bad input for the generator (a repository without passing tests, a non-pytest command...)."""


# ---------------------------------------------------------------------------------------------
# The pytest plugin that reports each test's outcome and failure as JSON (pytest >= 7)

PLUGIN_SOURCE = r'''
"""fixrl generator: per-test outcomes and failures as JSON (written at session end)."""
import json
import os

_tests = {}
_collect_errors = []


def _rel(path):
    path = str(path)
    cwd = os.getcwd()
    if os.path.isabs(path) and path.startswith(cwd + os.sep):
        return os.path.relpath(path, cwd)
    return path


def _failure(report):
    lr = report.longrepr
    info = {"message": "", "entries": []}
    crash = getattr(lr, "reprcrash", None)
    if crash is not None:
        info["message"] = crash.message
    tb = getattr(lr, "reprtraceback", None)
    for entry in getattr(tb, "reprentries", None) or []:
        loc = getattr(entry, "reprfileloc", None)
        if loc is not None:
            info["entries"].append([_rel(loc.path), loc.lineno])
    if not info["message"]:
        info["message"] = (getattr(report, "longreprtext", "") or "")[-2000:]
    info["detail"] = getattr(report, "_fixrl_detail", None)  # from the capture code below
    return info


def pytest_runtest_logreport(report):
    t = _tests.setdefault(report.nodeid, {"outcome": None})
    if report.failed:
        if t["outcome"] not in ("failed", "error"):
            t["outcome"] = "failed" if report.when == "call" else "error"
            t.update(_failure(report))
    elif report.skipped:
        if t["outcome"] is None:
            t["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    elif report.when == "call" and t["outcome"] is None:
        t["outcome"] = "passed"


def pytest_collectreport(report):
    if report.failed:
        _collect_errors.append(report.nodeid or "<session>")


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["FIXRL_GEN_REPORT"], "w") as f:
        json.dump({"tests": _tests, "collect_errors": _collect_errors, "exitstatus": int(exitstatus)}, f)
''' + capture_source()


# ---------------------------------------------------------------------------------------------
# Records

@dataclass
class TestRun:
    outcomes: dict[str, str]
    failures: dict[str, Failure]
    exit_code: int
    seconds: float
    timed_out: bool = False
    collect_errors: list[str] = field(default_factory=list)


@dataclass
class Candidate:
    file: str
    qualname: str
    name: str
    mutant: Mutant
    status: str = "untested"
    """untested | kept | equivalent | not_local | timeout | error"""
    broken: list[str] = field(default_factory=list)
    failures: dict[str, Failure] = field(default_factory=dict)


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

    def to_json(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# Repository scanning

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


# ---------------------------------------------------------------------------------------------
# Running the tests

_DROP_ARGS = {"-x", "--exitfirst", "--lf", "--last-failed", "--ff", "--failed-first", "--sw", "--stepwise"}


def _pytest_parts(test_cmd: str):
    parsed = parse_pytest_command(test_cmd)
    if parsed is None:
        raise GenerateError(
            f"--test-cmd {test_cmd!r} is not a plain pytest command: the generator needs per-test "
            "results, so give `pytest [args]` or `python -m pytest [args]` (no shell operators; put "
            "other settings in pytest.ini)")
    return parsed


def _run_command(test_cmd: str) -> str:
    parsed = _pytest_parts(test_cmd)
    args = [a for a in parsed.args if a not in _DROP_ARGS and not a.startswith("--maxfail")]
    head = parsed.env + [parsed.python] + parsed.python_flags + ["-m", "pytest"]
    pytest_cmd = " ".join(shlex.quote(t) for t in head + args + ["-p", PLUGIN, "-vvv", "--tb=long"])
    report = f"$PWD/{GEN_DIR}/report.json"
    return (f'export FIXRL_GEN_REPORT="{report}" PYTHONPATH="$PWD/{GEN_DIR}${{PYTHONPATH:+:$PYTHONPATH}}"; '
            f'rm -f "$FIXRL_GEN_REPORT"; {pytest_cmd}')


def check_command(test_cmd: str, nodeids: list[str]) -> str:
    """The hidden check: the same interpreter running exactly these tests."""
    parsed = _pytest_parts(test_cmd)
    head = parsed.env + [parsed.python] + parsed.python_flags + ["-m", "pytest", "-q"]
    return " ".join(shlex.quote(t) for t in head + list(nodeids))


def run_tests(sb, test_cmd: str, timeout: float) -> TestRun | None:
    """Run the tests in a sandbox holding a prepared working copy; None when pytest wrote no
    report (the command is not pytest, or pytest crashed before the end of the session)."""
    res = sb.exec(_run_command(test_cmd), timeout=timeout)
    try:
        data = json.loads(sb.read_file(f"{GEN_DIR}/report.json"))
    except (FileNotFoundError, json.JSONDecodeError, OSError):
        if res.timed_out:
            return TestRun({}, {}, res.exit_code, res.seconds, timed_out=True)
        return None
    outcomes: dict[str, str] = {}
    failures: dict[str, Failure] = {}
    for nodeid, t in data.get("tests", {}).items():
        outcomes[nodeid] = t.get("outcome") or "error"
        if outcomes[nodeid] in ("failed", "error"):
            failures[nodeid] = Failure.from_record(nodeid, t)
    return TestRun(outcomes, failures, res.exit_code, res.seconds, res.timed_out, data.get("collect_errors", []))


# ---------------------------------------------------------------------------------------------
# Ordering, selection and splitting (pure functions of the seed)

def round_robin(cands: list[Candidate], rng: random.Random) -> list[Candidate]:
    """Interleave families, and within a family interleave functions, both in seeded order."""
    by_op: dict[str, list[Candidate]] = defaultdict(list)
    for c in cands:
        by_op[c.mutant.op].append(c)
    streams = []
    for op in sorted(by_op):
        by_fn: dict[str, list[Candidate]] = defaultdict(list)
        for c in by_op[op]:
            by_fn[f"{c.file}::{c.qualname}"].append(c)
        fns = sorted(by_fn)
        rng.shuffle(fns)
        for fn in fns:
            rng.shuffle(by_fn[fn])
        streams.append(_interleave([by_fn[f] for f in fns]))
    rng.shuffle(streams)
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
             backend: str = "local", heldout_frac: float = 1 / 3, *, workers: int | None = None,
             max_broken_frac: float = 0.5, pass_to_pass: int = 10, max_fail_to_pass: int = 25,
             max_turns: int = 8, max_edits: int | None = 1, validate: bool = True, repeats: int = 2,
             ops: list[str] | None = None, progress: bool = True) -> GenerateReport:
    """Generate up to `max_tasks` validated bug-fix tasks from `repo` into the suite `out`."""
    t0 = time.monotonic()
    given = (str(repo), str(out))
    repo, out = Path(repo).resolve(), Path(out).resolve()
    if not repo.is_dir():
        raise GenerateError(f"--repo {repo}: not a directory")
    if out == repo or repo in out.parents:
        raise GenerateError(f"--out {out} is inside --repo {repo}: write the suite elsewhere "
                            "(the suite gets its own copy of the repository)")
    if max_tasks is not None and max_tasks < 1:
        raise GenerateError(f"--max must be at least 1, got {max_tasks}")
    if not 0 <= heldout_frac < 1:
        raise GenerateError(f"--heldout-frac must be in [0, 1), got {heldout_frac}")
    for op in ops or []:
        if op not in OPERATORS:
            raise GenerateError(f"unknown operator {op!r}; known: {', '.join(OPERATORS)}")
    _pytest_parts(test_cmd)
    rng = random.Random(seed)
    workers = workers or max(1, min(4, os.cpu_count() or 1))
    report = GenerateReport(given[0], given[1], test_cmd, seed)
    report.per_op = {op: OpStats() for op in (ops or OPERATORS)}


    with tempfile.TemporaryDirectory(prefix="fixrl-gen-") as tmp:
        work = Path(tmp) / "repo"
        _copy_repo(repo, work)
        (work / GEN_DIR).mkdir(exist_ok=True)
        (work / GEN_DIR / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")

        with SandboxPool(workers, backend=backend) as pool:
            # 1. baseline, twice: a test must pass both times to count as stable
            runs = []
            for _ in range(2):
                with pool.acquire(work) as sb:
                    runs.append(run_tests(sb, test_cmd, timeout=600))
            base = _check_baseline(runs, test_cmd)
            stable = sorted(base)
            report.tests = len(stable)
            report.baseline_seconds = round(max(r.seconds for r in runs), 3)  # type: ignore[union-attr]
            timeout = min(600.0, 5.0 + 3 * report.baseline_seconds)

            # 2. candidates
            files = python_files(work)
            report.files = len(files)
            names = Counter()
            per_file: dict[str, list] = {}
            for f in files:
                try:
                    per_file[f] = [i for i in list_functions((work / f).read_text(encoding="utf-8"))
                                   if not (i.name.startswith("__") and i.name.endswith("__"))]
                except (SyntaxError, UnicodeDecodeError, ValueError) as e:
                    log.warning("skipping %s: %s", f, e)
                    per_file[f] = []
                names.update(i.name for i in per_file[f])
            cands: list[Candidate] = []
            seen: set[tuple[str, str]] = set()
            for f, infos in per_file.items():
                source = (work / f).read_text(encoding="utf-8")
                for info in infos:
                    if names[info.name] > 1:
                        continue  # renaming and the split need a name that means one function
                    report.functions += 1
                    try:
                        ms = mutants(source, info.qualname, ops)
                    except (SyntaxError, ValueError, RecursionError) as e:
                        log.warning("skipping %s::%s: %s", f, info.qualname, e)
                        continue
                    for m in ms:
                        if (f, m.source) in seen:
                            continue
                        seen.add((f, m.source))
                        cands.append(Candidate(f, info.qualname, info.name, m))
                        report.per_op[m.op].candidates += 1
            report.candidates = len(cands)
            if not cands:
                raise GenerateError(f"{repo}: no mutable functions found in {len(files)} non-test .py file(s)")
            order = round_robin(cands, rng)

            # 3. run the tests on each candidate, in parallel, until enough are kept
            target = None if max_tasks is None else (3 * max_tasks) // 2 + 5
            sources = {f: (work / f).read_text(encoding="utf-8") for f in per_file}

            def evaluate(c: Candidate) -> Candidate:
                for attempt in range(2):
                    try:
                        with pool.acquire(work) as sb:
                            sb.write_file(c.file, c.mutant.source)
                            run = run_tests(sb, test_cmd, timeout)
                        break
                    except SandboxError as e:
                        log.warning("sandbox failed on %s (attempt %d): %s", c.mutant.description, attempt + 1, e)
                        run = None
                        if attempt == 1:
                            c.status = "error"
                            return c
                _classify(c, run, stable, max_broken_frac)
                return c

            kept: list[Candidate] = []
            batch = max(workers * 4, 8)
            with _progress(progress, len(order)) as bar, ThreadPoolExecutor(workers) as ex:
                for i in range(0, len(order), batch):
                    if target is not None and len(kept) >= target:
                        break
                    for c in ex.map(evaluate, order[i:i + batch]):
                        st = report.per_op[c.mutant.op]
                        st.tested += 1
                        setattr(st, c.status, getattr(st, c.status) + 1)
                        if c.status in ("kept", "not_local"):
                            st.broke += 1
                        if c.status == "kept":
                            kept.append(c)
                        bar(c)
            report.tested = sum(s.tested for s in report.per_op.values())
            report.broke = sum(s.broke for s in report.per_op.values())
            report.kept = len(kept)

        # 4. tasks: issue texts, selection, split, files
        with_issue = []
        for c in kept:
            issue, why = _issue_for(c, work, sources[c.file], rng)
            if issue is None:
                report.per_op[c.mutant.op].no_issue += 1
                report.no_issue_reasons[why] = report.no_issue_reasons.get(why, 0) + 1
                continue
            with_issue.append((c, issue))
        _prepare_out(out, repo, work, names, test_cmd, max_turns, max_edits)
        chosen = _select(with_issue, max_tasks, rng)
        fns = sorted({f"{c.file}::{c.qualname}" for c, _ in chosen})
        weights = Counter(f"{c.file}::{c.qualname}" for c, _ in chosen)
        held = split_by_function(fns, weights, heldout_frac, rng)
        check_timeout = float(max(30, round(10 * report.baseline_seconds)))
        written = _write_tasks(chosen, held, out, work, sources, test_cmd, pass_to_pass, max_fail_to_pass,
                               stable, rng, seed, check_timeout)
        for c, _ in chosen:
            report.per_op[c.mutant.op].selected += 1
        report.selected = len(chosen)

        # 5. validation: drop what does not validate
        if validate and written:
            verdicts = _validate(out, [tid for tid, _ in written], backend, workers, repeats)
            for tid, c in written:
                ok, why = verdicts.get(tid, (False, "not validated"))
                st = report.per_op[c.mutant.op]
                if ok:
                    st.valid += 1
                else:
                    st.invalid += 1
                    report.invalid_reasons[tid] = why
                    _remove_task(out, tid)
        else:
            for _, c in written:
                report.per_op[c.mutant.op].valid += 1
    report.valid = sum(s.valid for s in report.per_op.values())
    report.invalid = sum(s.invalid for s in report.per_op.values())
    report.task_ids = sorted(tid for tid, _ in written if tid not in report.invalid_reasons)
    ids = set(report.task_ids)
    report.heldout = sum(1 for tid, c in written if tid in ids and f"{c.file}::{c.qualname}" in held)
    report.train = len(ids) - report.heldout
    report.seconds = round(time.monotonic() - t0, 1)
    (out / REPORT_NAME).write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    return report


def _check_baseline(runs: list[TestRun | None], test_cmd: str) -> set[str]:
    if any(r is None for r in runs):
        raise GenerateError(f"repository without passing tests: `{test_cmd}` wrote no pytest report "
                            "(pytest did not run, or crashed before the end)")
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
    if run is None or run.collect_errors:
        c.status = "error"
        return
    if run.timed_out:
        c.status = "timeout"
        return
    broken = [n for n in stable if run.outcomes.get(n) != "passed"]
    if not broken:
        c.status = "equivalent"
        return
    if len(broken) > max_broken_frac * len(stable):
        c.status = "not_local"
        return
    c.status = "kept"
    c.broken = broken
    c.failures = {n: run.failures[n] for n in broken if n in run.failures}


def _issue_for(c: Candidate, work: Path, clean: str, rng: random.Random) -> tuple[str | None, str]:
    """(issue text, '') for a kept bug, or (None, why it has none) -- `tasks.issue_text`."""
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
    """Up to max_tasks, spread over families and functions (round-robin, seeded)."""
    order = round_robin([c for c, _ in items], rng)
    issue = {id(c): text for c, text in items}
    chosen = order if max_tasks is None else order[:max_tasks]
    return [(c, issue[id(c)]) for c in chosen]


def _prepare_out(out: Path, repo: Path, work: Path, names: Counter, test_cmd: str,
                 max_turns: int, max_edits: int | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    dest_repo = out / "repo"
    if dest_repo.resolve() != repo:
        if dest_repo.exists():
            shutil.rmtree(dest_repo)
        _copy_repo(repo, dest_repo)
    for d in (out / "tasks" / "generated", out / "checks" / "generated"):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
    suite_file = out / "suite.yaml"
    config = yaml.safe_load(suite_file.read_text(encoding="utf-8")) if suite_file.exists() else None
    config = config if isinstance(config, dict) else {}
    config.setdefault("name", out.name)
    config.setdefault("description", f"Bug-fix tasks generated from {repo.name} by `fixrl tasks generate`.")
    defaults = config.setdefault("defaults", {})
    defaults.setdefault("repo", "repo")
    defaults.setdefault("public_tests", test_cmd)
    limits = defaults.setdefault("limits", {})
    limits.setdefault("max_turns", max_turns)
    limits.setdefault("max_edits", max_edits)
    config["rename_pool"] = sorted(n for n, k in names.items() if k == 1 and not n.startswith("_"))
    suite_file.write_text(dump_yaml(config), encoding="utf-8")


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
        fn_key = f"{c.file}::{c.qualname}"
        task = {
            "id": tid,
            "kind": "fix",
            "split": "heldout" if fn_key in held else "train",
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
    """task id -> (valid, why not), by `tasks.validate` (check fails on the bug, passes with the
    fix, the same verdict on every repeat, the public tests run)."""

    config = load_suite_config(out)
    loaded = []
    verdicts: dict[str, tuple[bool, str]] = {}
    for tid in ids:
        try:
            loaded.append(load_task(out / "tasks" / "generated" / f"{tid}.yaml", config.defaults, out))
        except ValueError as e:
            verdicts[tid] = (False, f"does not load: {e}")
    suite = Suite(dir=out, name=config.name or out.name, tasks=loaded)
    for res in validate_suite(suite, backend=backend, jobs=workers, repeats=repeats):
        verdicts[res.task_id] = (res.ok, "; ".join(res.reasons))
    return verdicts


class _progress:
    """A rich progress bar over the candidates (or nothing)."""

    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total = enabled, total
        self.kept = 0

    def __enter__(self):
        if not self.enabled:
            return lambda c: None

        self._p = Progress(TextColumn("mutants"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("kept {task.fields[kept]}"), TimeElapsedColumn(), transient=True)
        self._p.__enter__()
        self._t = self._p.add_task("mutants", total=self.total, kept=0)

        def advance(c: Candidate) -> None:
            self.kept += c.status == "kept"
            self._p.update(self._t, advance=1, kept=self.kept)

        return advance

    def __exit__(self, *exc):
        if self.enabled:
            self._p.__exit__(*exc)


# ---------------------------------------------------------------------------------------------
# Output and the command

def print_report(report: GenerateReport, console=None) -> None:
    console = console or Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 150))
    table = Table(title=f"fixrl tasks generate: yield ({report.tests} tests, baseline {report.baseline_seconds:.2f} s)")
    cols = ["candidates", "tested", "broke", "equivalent", "not_local", "timeout", "error", "kept", "no_issue",
            "selected", "valid", "invalid"]
    heads = ["cands", "tested", "broke", "equiv", "nonlocal", "timeout", "error", "kept", "no issue", "selected",
             "valid", "invalid"]
    table.add_column("operator")
    for head in heads:
        table.add_column(head, justify="right")
    for op, st in report.per_op.items():
        table.add_row(op, *(str(getattr(st, col)) for col in cols))
    table.add_row("total", *(str(sum(getattr(s, col) for s in report.per_op.values())) for col in cols), style="bold")
    console.print(table)
    console.print(f"{report.functions} functions in {report.files} files; {report.valid} valid tasks "
                  f"({report.train} train, {report.heldout} heldout) written to {report.out} in {report.seconds:.0f} s")
    for why, n in sorted(report.no_issue_reasons.items(), key=lambda x: (-x[1], x[0])):
        console.print(f"  no issue for {n} kept bug(s): {why}")
    for tid, why in sorted(report.invalid_reasons.items()):
        console.print(f"  dropped {tid}: {why}")

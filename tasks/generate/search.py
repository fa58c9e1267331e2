"""Stage 3 of the generator, the search: testing the candidates in parallel, decided in order,
journaled. `plan_selection` gives each candidate its covering tests (`Selection`);
`search_candidates` runs the stage and returns a `SearchResult`.

Each candidate (one mutant of one function) first runs the tests that cover its function
(`Candidate.select`, from tasks.generate.coverage; without assertion rewriting, `--assert=plain`,
since only their outcomes count): nothing of them breaks -> `equivalent`; more
than `max_broken_frac` of the suite breaks -> `not_local`; a timeout or a run without a report
(the mutant broke collection, killed pytest) -> `timeout` / `error`. A candidate that breaks
a covering test then runs the whole suite once: that run decides (`kept`, or what it shows
instead) and gives the check its tests -- every test the bug breaks, and the ones that pass.
A candidate whose function runs only at import (select None) runs the whole suite at once; one that
no test covers is `uncovered` and never runs.

Decisions are made in the candidates' order, one at a time, from finished runs only: a
candidate whose function already holds `max_per_function` kept bugs is `capped`, and the
search stops at the candidate that brings the kept bugs to `target`. Runs are started ahead
of that point (up to the runner's width) and their results wait until their turn, so the
kept list depends only on the outcomes, never on how many runs were at once or which ended
first: one process, eight workers or a cluster give the same suite, and so does a run resumed
from its journal. A run started ahead that turns out not to be needed is only time spent.
"""
from __future__ import annotations

import logging
import random
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path

from fixrl.tasks.generate.baseline import Baseline, TestRun
from fixrl.tasks.generate.candidate import Candidate
from fixrl.tasks.generate.config import GenerateConfig
from fixrl.tasks.generate.execute import JobResult, Runner, TestJob, run_job
from fixrl.tasks.generate.journal import Journal
from fixrl.tasks.generate.order import round_robin
from fixrl.tasks.generate.progress import GenProgress
from fixrl.tasks.generate.scan import Scan

log = logging.getLogger(__name__)

# ---------------------------------------------------------------- one run, reduced

def run_record(result: JobResult, expected: list[str], full: bool) -> dict:
    """What the generator keeps of a run (journaled as is): the expected tests that did not
    pass, their failure records, and how the run ended."""
    rec: dict = {"full": full, "seconds": round(result.seconds, 3), "timed_out": result.timed_out,
                 "error": None, "broken": [], "tests": {}}
    report = result.report
    if report is None:
        if not result.timed_out:
            rec["error"] = f"pytest wrote no report (exit status {result.exit_code})"
        return rec
    if report.get("collect_errors"):
        rec["error"] = "collection errors in " + ", ".join(report["collect_errors"][:3])
        return rec
    tests = report.get("tests", {})
    rec["broken"] = [n for n in expected if (tests.get(n) or {}).get("outcome") != "passed"]
    rec["tests"] = {n: tests[n] for n in rec["broken"] if n in tests}
    return rec


def run_status(rec: dict, n_stable: int, max_broken_frac: float) -> str:
    """error | timeout | equivalent | not_local | broke, from a run record."""
    if rec.get("error"):
        return "error"
    if rec.get("timed_out"):
        return "timeout"
    broken = rec.get("broken", [])
    if not broken:
        return "equivalent"
    if len(broken) > max_broken_frac * n_stable:
        return "not_local"
    return "broke"


# ---------------------------------------------------------------- the search

@dataclass
class SearchSettings:
    """How candidates are run and decided."""

    test_cmd: str
    """The user's pytest command."""
    stable: list[str]
    """Tests that passed in both baseline runs: the only ones that count."""
    full_timeout: float
    """Seconds a whole-suite run may take."""
    select_timeouts: dict[str, float]
    """Candidate key -> seconds its selected run may take."""
    target: int | None = None
    """Stop when this many bugs are kept (None: decide every candidate)."""
    max_per_function: int | None = None
    """At most this many kept bugs per function (None: no cap)."""
    max_broken_frac: float = 0.5
    """A bug that breaks more than this share of the stable tests is not local."""
    fork: bool = True
    """Let runs fork a ready interpreter where the sandbox can."""
    lookahead: int = 0
    """Candidates past the next undecided one whose runs may start ahead (0: four times the width)."""


class Search:
    """Runs and decides the candidates of `order` (see the module docstring)."""

    def __init__(self, order: list[Candidate], settings: SearchSettings, runner: Runner, work: Path,
                 journal: Journal, progress: GenProgress) -> None:
        self.order, self.s, self.runner, self.work = order, settings, runner, work
        self.journal, self.progress = journal, progress
        self.kept: list[Candidate] = []
        self.by_function: Counter[str] = Counter()
        self.records: dict[str, dict] = {}
        self.inflight: dict[Future, tuple[Candidate, str]] = {}
        self.failed: set[str] = set()
        """Record ids whose run failed for infrastructure reasons (never journaled)."""
        self.full_runs = 0
        self.reused = 0
        self.selected_sizes: list[int] = []

    # ---- records

    def _rid(self, c: Candidate, full: bool) -> str:
        return f"{c.key}/{'full' if full else 'sel'}"

    def _record(self, rid: str) -> dict | None:
        rec = self.records.get(rid)
        if rec is None:
            rec = self.journal.get(rid)
            if rec is not None:
                self.records[rid] = rec
                self.reused += 1
        return rec

    def _expected(self, c: Candidate, full: bool) -> list[str]:
        return self.s.stable if full or c.select is None else sorted(c.select)

    # ---- deciding, in order

    def run(self) -> list[Candidate]:
        """Decide candidates until the target is reached or the list ends; the kept ones, in order."""
        p = 0
        ok = False
        try:
            while True:
                p = self._decide(p)
                if p >= len(self.order) or self._reached():
                    break
                self._dispatch(p)
                if not self.inflight:
                    raise AssertionError(f"the search stalled at candidate {p}")
                tick = min(5.0, max(0.2, self.progress.every))  # wake up for the progress lines
                done, _ = wait(list(self.inflight), timeout=tick, return_when=FIRST_COMPLETED)
                for fut in done:
                    self._finish(fut)
                self.progress.update()
            ok = True
        finally:
            self._drain(wait_running=ok)
        return self.kept

    def _reached(self) -> bool:
        return self.s.target is not None and len(self.kept) >= self.s.target

    def _capped(self, c: Candidate, extra: Counter[str] | None = None) -> bool:
        cap = self.s.max_per_function
        return cap is not None and self.by_function[c.function] + (extra or {}).get(c.function, 0) >= cap

    def _decide(self, p: int) -> int:
        counts = self.progress.counts
        while p < len(self.order) and not self._reached():
            c = self.order[p]
            if self._capped(c) or (c.select is not None and not c.select):
                c.status = "capped" if self._capped(c) else "uncovered"
                counts.skipped += 1
            else:
                status = self._status(c)
                if status is None:
                    return p
                c.status = status
                counts.tested += 1
                if status == "kept":
                    self.kept.append(c)
                    self.by_function[c.function] += 1
                    counts.kept += 1
            counts.done += 1
            p += 1
        return p

    def _status(self, c: Candidate) -> str | None:
        """The candidate's decision from its finished runs; None while one is missing."""
        first = self._record(self._rid(c, c.select is None))
        if first is None:
            return "error" if self._rid(c, c.select is None) in self.failed else None
        n, frac = len(self.s.stable), self.s.max_broken_frac
        status = run_status(first, n, frac)
        if status == "broke" and not first["full"]:
            full = self._record(self._rid(c, True))
            if full is None:
                return "error" if self._rid(c, True) in self.failed else None
            first, status = full, run_status(full, n, frac)
        if status == "broke":
            c.broken, c.records = list(first["broken"]), dict(first["tests"])
            return "kept"
        return status

    # ---- starting runs ahead

    def _dispatch(self, p: int) -> None:
        free = self.runner.width - len(self.inflight)
        running = {rid for _, rid in self.inflight.values()}
        ahead = self.s.lookahead or max(16, 4 * self.runner.width)
        window = self.order[p:p + ahead]
        room = None if self.s.target is None else self.s.target - len(self.kept)
        likely: Counter[str] = Counter()
        wanted: list[tuple[Candidate, bool]] = []
        # Whole-suite runs of candidates that broke a covering test come first (the decisions
        # wait on them), as many as could still be kept; then selected runs, in order.
        for c in window:
            if self._capped(c, likely) or (c.select is not None and not c.select):
                continue
            first = self._record(self._rid(c, c.select is None))
            if first is not None and run_status(first, len(self.s.stable), self.s.max_broken_frac) == "broke":
                likely[c.function] += 1
                if room is not None and sum(likely.values()) > room:
                    break
                if not first["full"] and self._record(self._rid(c, True)) is None:
                    wanted.append((c, True))
        likely.clear()
        for c in window:
            if self._capped(c, likely) or (c.select is not None and not c.select):
                continue
            rid = self._rid(c, c.select is None)
            first = self._record(rid)
            if first is None:
                wanted.append((c, c.select is None))
            elif run_status(first, len(self.s.stable), self.s.max_broken_frac) == "broke":
                likely[c.function] += 1
        for c, full in wanted:
            rid = self._rid(c, full)
            if free <= 0:
                return
            if rid in running or rid in self.failed or self._record(rid) is not None:
                continue
            self._submit(c, full)
            running.add(rid)
            free -= 1

    def _submit(self, c: Candidate, full: bool) -> None:
        timeout = self.s.full_timeout if full else self.s.select_timeouts.get(c.key, self.s.full_timeout)
        # A selected run only filters (its failures are never read: a kept bug's come from its
        # whole-suite run), so it skips assertion rewriting.
        job = TestJob(self.s.test_cmd, timeout, c.file, c.mutant.source,
                      select=None if full else tuple(sorted(c.select or ())), fork=self.s.fork, plain_asserts=not full)
        fut = self.runner.submit(run_job, self.work, job, seconds=2 * timeout + 180)
        self.inflight[fut] = (c, self._rid(c, full))

    def _finish(self, fut: Future) -> None:
        c, rid = self.inflight.pop(fut)
        full = rid.endswith("/full")
        try:
            result = fut.result()
        except Exception as e:  # noqa: BLE001 - an infrastructure failure: the candidate is dropped, not judged
            log.warning("testing %s in %s failed (%s: %s); the candidate counts as an error", c.mutant.description,
                        c.function, type(e).__name__, e)
            self.failed.add(rid)
            return
        rec = run_record(result, self._expected(c, full), full)
        self.records[rid] = rec
        self.journal.put(rid, rec)
        if full:
            self.full_runs += 1
        else:
            self.selected_sizes.append(len(c.select or ()))
        if not full or c.select is None:
            self.progress.counts.fresh += 1

    def _drain(self, wait_running: bool) -> None:
        """Runs started ahead and no longer needed: those not begun are cancelled, the others
        finish and are journaled (a later run with a larger --max reuses them); after an
        error or an interrupt nothing is waited for."""
        for fut in list(self.inflight):
            if fut.cancel():
                del self.inflight[fut]
        if self.inflight and wait_running:
            wait(list(self.inflight))
            for fut in list(self.inflight):
                self._finish(fut)


def _classify(c: Candidate, run: TestRun | None, stable: list[str], max_broken_frac: float) -> None:
    """Decide `c` from one whole-suite run (what the search does with run records)."""
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


# ---------------------------------------------------------------- stage 3: test selection and the search

@dataclass(frozen=True)
class Selection:
    """Which tests each candidate's function runs, and the time its selected run may take."""

    tests: dict[str, frozenset[str] | None]
    """Function -> its covering stable tests (None: it runs only at import, the whole suite)."""
    timeouts: dict[str, float]
    """Candidate key -> seconds its selected run may take."""
    functions_covered: int = 0
    functions_at_import: int = 0
    functions_uncovered: int = 0
    opaque_tests: int = 0
    """Tests in every selection (they start processes or replace the profiler)."""


def plan_selection(cands: list[Candidate], scanned: Scan, base: Baseline, full_timeout: float) -> Selection:
    """Each candidate's covering stable tests (none recorded: every candidate runs the whole
    suite) and the seconds each selected run may take (three times what its tests took, plus the
    start-up the baseline showed, plus ten)."""
    timeouts: dict[str, float] = {}
    if base.cover is None:
        return Selection({}, timeouts)
    stable = frozenset(base.stable)
    startup = max(0.0, base.seconds - sum(base.cover.durations.get(t, 0.0) for t in base.stable))
    tests: dict[str, frozenset[str] | None] = {}
    for c in cands:
        if c.function not in tests:
            span = scanned.spans.get(c.file, {}).get(c.qualname)
            sel = base.cover.covering(c.file, span) if span is not None else None
            tests[c.function] = None if sel is None else sel & stable
        if tests[c.function] is not None:
            took = sum(base.cover.durations.get(t, 0.0) for t in tests[c.function])  # type: ignore[union-attr]
            timeouts[c.key] = min(full_timeout, 10.0 + 3 * (startup + took))
    sels = list(tests.values())
    return Selection(tests, timeouts, functions_covered=sum(bool(s) for s in sels),
                     functions_at_import=sum(s is None for s in sels),
                     functions_uncovered=sum(s is not None and not s for s in sels),
                     opaque_tests=len(base.cover.opaque))


def stop_reason(order: list[Candidate], kept: int, target: int | None, max_per_function: int | None) -> str:
    """Why candidate testing ended where it did: the target reached, or the list run out (and
    where its candidates went), so that a bar that stops short says why."""
    if target is not None and kept >= target:
        return f"candidate testing stopped: {kept} bugs kept, the {target} wanted; the other candidates were not needed"
    status = [c.status for c in order]
    why = [f"{status.count(k)} {label}" for k, label in (
        ("equivalent", "changed no test's result (equivalent mutants)"), ("not_local", "broke too many tests"),
        ("timeout", "timed out"), ("error", "could not run"), ("uncovered", "were covered by no test"),
        ("capped", f"were over --max-per-function {max_per_function}")) if status.count(k)]
    wanted = f" of the {target} wanted" if target is not None else ""
    return (f"candidate testing ended: every one of the {len(order)} candidates was decided, {kept} bugs kept{wanted}"
            + (f"; the others: {', '.join(why)}" if why else ""))


@dataclass(frozen=True)
class SearchResult:
    """Stage 3's result: every candidate in the order tried (each with its status) and the kept bugs."""

    order: list[Candidate]
    kept: list[Candidate]
    full_runs: int
    """Whole-suite runs of candidates in this session."""
    reused: int
    """Outcomes read back from the journal."""
    mean_selected_tests: float
    candidates_per_minute: float


def search_candidates(scanned: Scan, base: Baseline, selection: Selection, runner: Runner, work: Path,
                      test_cmd: str, cfg: GenerateConfig, journal: Journal, progress: GenProgress,
                      rng: random.Random) -> SearchResult:
    """Stage 3: the candidates in seeded round-robin order, each with its covering tests, tested
    until enough bugs are kept (`Search`)."""
    for c in scanned.candidates:
        c.select = selection.tests.get(c.function) if base.cover is not None else None
    order = round_robin(scanned.candidates, rng)
    target = None if cfg.max_tasks is None else (3 * cfg.max_tasks) // 2 + 5
    settings = SearchSettings(test_cmd, base.stable, base.full_timeout, selection.timeouts, target,
                              cfg.max_per_function, cfg.max_broken_frac, base.fork)
    search = Search(order, settings, runner, work, journal, progress)
    if target is not None:
        progress.note(f"testing candidates until {target} bugs are kept: --max {cfg.max_tasks} plus spares for "
                      "the bugs that get no issue text or fail validation")
    progress.start(len(order), target, reused=journal.reused)
    kept = search.run()
    per_minute = progress.finish()
    progress.note(stop_reason(order, len(kept), target, cfg.max_per_function))
    sizes = search.selected_sizes
    return SearchResult(order, kept, search.full_runs, search.reused,
                        round(sum(sizes) / len(sizes), 1) if sizes else 0.0, per_minute)

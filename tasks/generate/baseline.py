"""Stage 1 of the generator, the baseline: the repository's tests run twice in sandboxes; the
second run also records which tests run which code (`tasks.generate.coverage`). Both runs are
journaled, so a resumed run reads them back.

Only tests that passed in both runs (`Baseline.stable`) are ever judged: a test that fails or
errors in both runs on the unmodified repository is *excluded* (`Baseline.excluded`, with its
first error line, listed in the yield report), like one that passed in only one run (unstable);
neither goes into a check, an issue text, or the `test` tool's command. Real libraries ship such
tests (attrs 25.x: 5; python-dateutil: tz tests needing system zoneinfo; flask: one WSGI test):
refusing the repository for them lost every task. The repository is refused only when more than
`--max-baseline-failures` of its tests are excluded, on collection errors, or when none passes.

What this does not guarantee: that a test passing twice is not flaky (a test that passed in
only one of the two runs is left out of every check, with a warning)."""
from __future__ import annotations

import dataclasses
import logging
import signal
from dataclasses import dataclass, field
from pathlib import Path

from fixrl.tasks.generate.config import GenerateConfig, GenerateError
from fixrl.tasks.generate.coverage import CoverageMap
from fixrl.tasks.generate.execute import JobResult, Runner, TestJob, run_job
from fixrl.tasks.generate.issue import Failure
from fixrl.tasks.generate.journal import Journal
from fixrl.tasks.generate.progress import GenProgress

log = logging.getLogger(__name__)

_RUNS = ("the baseline run", "the coverage run (the second baseline run, under the generator's coverage plugin)")


@dataclass(frozen=True)
class TestRun:
    """One run of the suite as outcomes and failures."""

    __test__ = False  # not a pytest test class

    outcomes: dict[str, str]
    failures: dict[str, Failure]
    exit_code: int
    seconds: float
    timed_out: bool = False
    collect_errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BaselineCheck:
    """What `_check_baseline` keeps of the two runs."""

    stable: set[str]
    """Tests that passed in both runs: the only ones ever judged."""
    excluded: dict[str, str]
    """Tests that failed or errored in both runs -> the first line of the error."""


@dataclass(frozen=True)
class Baseline:
    """What the clean suite showed: the result of stage 1."""

    stable: list[str]
    """Tests that passed in both runs."""
    seconds: float
    """The untraced run's seconds."""
    cover: CoverageMap | None
    """Which tests run which code (None: selection off, or nothing was recorded)."""
    cover_seconds: float = 0.0
    fork: bool = True
    """Whether test runs fork a ready interpreter (off when forked runs wrote no report)."""
    excluded: dict[str, str] = field(default_factory=dict)
    """Tests that failed (or errored) in both runs on the unmodified repository -> the first
    line of their error: never judged (not in `stable`)."""

    @property
    def full_timeout(self) -> float:
        """Seconds a candidate's whole-suite run may take."""
        return min(600.0, 5.0 + 3 * self.seconds)


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


def baseline(runner: Runner, work: Path, test_cmd: str, cfg: GenerateConfig, journal: Journal,
             progress: GenProgress) -> Baseline:
    """The clean suite, twice (the second run recording coverage), or both read back from the
    journal. When forked runs write no report but fresh interpreters do, the result says not to fork."""
    fork = cfg.fork
    rec, crec = journal.get("baseline"), journal.get("coverage")
    if rec is None or (cfg.select and crec is None):
        results = _baseline_runs(runner, work, test_cmd, cfg)
        if fork and any(r.report is None and not r.timed_out for r in results):
            plain = _baseline_runs(runner, work, test_cmd, dataclasses.replace(cfg, fork=False))
            if all(r.report is not None for r in plain):
                bad = next(r for r in results if r.report is None)
                log.warning("pytest in a forked interpreter wrote no report, in a fresh one it did: every run "
                            "starts a fresh interpreter (slower). The forked run's output ends: %s", bad.output[-600:])
                fork = False
            results = plain
        checked = _check_baseline([as_test_run(r) for r in results], test_cmd, results, cfg.max_baseline_failures,
                                  cfg.baseline_timeout)
        rec = {"stable": sorted(checked.stable), "seconds": round(results[0].seconds, 3), "fork": fork,
               "excluded": dict(sorted(checked.excluded.items()))}
        journal.put("baseline", rec)
        if cfg.select:
            if results[1].cover is None:
                log.warning("the coverage run wrote no record: every candidate runs the whole suite")
            crec = {"data": results[1].cover, "seconds": round(results[1].seconds, 3)}
            journal.put("coverage", crec)
    else:
        fork = fork and bool(rec.get("fork", True))
        progress.note("baseline and coverage: read back from the journal")
    cover = CoverageMap.from_record(crec["data"]) if cfg.select and crec and crec.get("data") else None
    return Baseline(list(rec["stable"]), float(rec["seconds"]), cover, float((crec or {}).get("seconds", 0.0)),
                    fork, dict(rec.get("excluded") or {}))

def _baseline_runs(runner: Runner, work: Path, test_cmd: str, cfg: GenerateConfig) -> list[JobResult]:
    jobs = [TestJob(test_cmd, cfg.baseline_timeout, fork=cfg.fork),
            TestJob(test_cmd, cfg.baseline_timeout, cover=cfg.select, fork=cfg.fork)]
    futures = [runner.submit(run_job, work, j, seconds=cfg.baseline_timeout + 300) for j in jobs]
    return [f.result() for f in futures]  # a SandboxError here is the run's: nothing to judge yet


def _timed_out(test_cmd: str, result: JobResult | None, timeout: float, which: int = 0) -> str:
    """The message of a baseline run stopped by its time limit (`which`: 0 the baseline run, 1
    the coverage run): the test it was running when it was stopped (a live server that never
    answers, a read that waits on the network the sandbox does not have) and how to leave it out,
    or to give a suite that is only slow more time."""
    msg = (f"repository without passing tests: `{test_cmd}` did not finish in {timeout:.0f} s in {_RUNS[which]}; "
           "a suite that is only slow: raise --baseline-timeout")
    running = result.running if result is not None else None
    if running is None:
        return msg + " (no test was noted as running: collection or a session-wide fixture may hang)"
    return (f"{msg}; the test it was running when it was stopped: {running} (a test that waits on a "
            f"server, a subprocess or the network, which the sandbox does not have, hangs): leave it out of "
            f"--test-cmd (`--deselect {running}`, or `-m 'not MARK'`), or bound each test with "
            f"pytest-timeout (`--timeout=60`)")


def _no_report(test_cmd: str, results: list[JobResult]) -> str:
    """The message of a baseline run that wrote no pytest report: which run, how it ended (a
    signal names a crash or a kill), and its output's last lines (the sandbox's limit notes)."""
    which, bad = next((i, r) for i, r in enumerate(results) if r.report is None)
    code = bad.exit_code
    sig = -code if code < 0 else code - 128 if 128 < code < 128 + 65 else 0
    name = next((s.name for s in signal.Signals if s.value == sig), f"signal {sig}") if sig else ""
    ended = f"was killed by {name}" if name else f"exited with status {code}"
    tail = bad.output.strip()[-800:]
    return (f"repository without passing tests: `{test_cmd}` wrote no pytest report in {_RUNS[which]}: pytest "
            f"{ended} (it did not run, or crashed before the end)" + (f"; its output ends:\n{tail}" if tail else ""))


def _crash_line(failure: Failure | None) -> str:
    """The first non-empty line of a failed test's crash message ('' when it has none)."""
    message = failure.message if failure is not None else ""
    return next((line.strip() for line in message.splitlines() if line.strip()), "")[:300]


def _check_baseline(runs: list[TestRun | None], test_cmd: str, results: list[JobResult] | None = None,
                    max_failures: float = 0.1, timeout: float = 600.0) -> BaselineCheck:
    """The stable and the excluded tests of the baseline's runs; GenerateError when the
    repository cannot be used (a timeout of either run, no report, collection errors, no passing
    test, more than `max_failures` of its tests failing in every run)."""
    stopped = next((i for i, r in enumerate(runs) if r is not None and r.timed_out), None)
    if stopped is not None:  # the coverage run's too: its record would be a part of the suite's
        raise GenerateError(_timed_out(test_cmd, results[stopped] if results else None, timeout, stopped))
    if any(r is None for r in runs):
        if results:
            raise GenerateError(_no_report(test_cmd, results))
        raise GenerateError(f"repository without passing tests: `{test_cmd}` wrote no pytest report")
    assert all(r is not None for r in runs)
    first = runs[0]
    if first.collect_errors:  # type: ignore[union-attr]
        # A file that does not collect hides how many tests it holds: no fraction can be judged.
        files = first.collect_errors  # type: ignore[union-attr]
        raise GenerateError(f"repository without passing tests: collection errors in {', '.join(files[:5])}"
                            + (f" and {len(files) - 5} more" if len(files) > 5 else "")
                            + "; fix them or leave those files out of --test-cmd ("
                            + " ".join(f"--ignore {f.split('::', 1)[0]}" for f in files[:5]) + ")")
    passed = [{n for n, o in r.outcomes.items() if o == "passed"} for r in runs]  # type: ignore[union-attr]
    if not passed[0]:
        raise GenerateError(f"repository without passing tests: `{test_cmd}` ran "
                            f"{len(first.outcomes)} test(s) and none passed")  # type: ignore[union-attr]
    failed = [{n for n, o in r.outcomes.items() if o in ("failed", "error")} for r in runs]  # type: ignore[union-attr]
    # A test that fails in every run is excluded; one that fails in a single run (a time limit
    # under the coverage run's profiler, a loaded machine) is unstable, like one that passes in
    # a single run: both are left out of every check below.
    failing = sorted(set.intersection(*failed))
    total = len(first.outcomes)  # type: ignore[union-attr]
    if failing and len(failing) > max_failures * total:
        raise GenerateError(
            f"repository without passing tests: {len(failing)} of {total} test(s) fail on the unmodified "
            f"repository (e.g. {failing[0]}), more than --max-baseline-failures {max_failures:g} of them; "
            f"fix them, exclude them from --test-cmd (e.g. `--deselect {failing[0]}`) or raise "
            "--max-baseline-failures")
    excluded = {n: _crash_line(first.failures.get(n)) for n in failing}  # type: ignore[union-attr]
    if excluded:
        log.warning("%d test(s) fail on the unmodified repository (excluded from every check): %s", len(excluded),
                    ", ".join(failing[:5]))
    flaky = passed[0] ^ passed[1]
    if flaky:
        log.warning("%d test(s) passed in only one of two baseline runs (ignored): %s", len(flaky),
                    ", ".join(sorted(flaky)[:5]))
    return BaselineCheck(passed[0] & passed[1], excluded)

"""fixrl bench generate: candidates per minute when each candidate runs only the tests that
cover its function, against the whole suite per candidate -- the same candidates of the same
repository, in the same run.

    fixrl bench generate --repo toolz-1.2.0 --test-cmd "python -m pytest -q toolz/tests" --candidates 30

Four arms test the same first N candidates of the generator's order (candidates no test covers
are left out: the generator skips them without a run, which would flatter selection): the whole
suite or the selected tests, each in a fresh interpreter (`exec`) or in a fork of a ready one
(the local backend's default); selected runs skip assertion rewriting, as the generator's do
(their failures are never read). The arms take turns on chunks of candidates so that a noisy
machine weighs on all of them alike. The figures: wall seconds and candidates per minute per
arm, the ratio to the whole suite in a fresh interpreter (the generator without selection), and
whether selection decided every candidate as the whole suite did (a candidate the whole suite
detects and its selection does not is a `miss`). The generator also runs the whole suite once
for every candidate whose selection breaks something; `with kept runs` adds that cost (the
forked whole-suite arm's seconds per candidate) to the selected-forked arm.
"""
from __future__ import annotations

import random
import tempfile
import time
from concurrent.futures import wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.table import Table

from fixrl.harness.bench.errors import BenchError
from fixrl.tasks.generate.baseline import baseline
from fixrl.tasks.generate.candidate import Candidate
from fixrl.tasks.generate.config import GenerateConfig, GenerateError
from fixrl.tasks.generate.execute import LocalRunner, TestJob, run_job
from fixrl.tasks.generate.journal import Journal
from fixrl.tasks.generate.order import round_robin
from fixrl.tasks.generate.pipeline import _open_work, _write_plugins
from fixrl.tasks.generate.progress import GenProgress
from fixrl.tasks.generate.scan import scan
from fixrl.tasks.generate.search import Selection, plan_selection, run_record, run_status


@dataclass
class Config:
    """`fixrl bench generate`."""

    repo: str | None = None
    """The repository (a directory with its test suite); required."""
    test_cmd: str = "python -m pytest -q"
    """Its pytest command."""
    candidates: int = 30
    """Candidates each arm tests (the same ones)."""
    workers: int = 2
    """Test runs at once."""
    seed: int = 0
    """Orders the candidates, as the generator's seed."""
    backend: Literal["local", "docker"] = "local"
    """Sandbox backend (Docker has no forked runs: its forked arms run fresh interpreters too)."""

    def validate(self) -> None:
        if not self.repo or not Path(self.repo).is_dir():
            raise BenchError(f"bench generate: --repo {self.repo!r} is not a directory (give the repository)")
        if self.candidates < 1 or self.workers < 1:
            raise BenchError(f"bench generate: candidates ({self.candidates}) and workers ({self.workers}) "
                             "must be >= 1")


ARMS = [("whole suite, fresh interpreter", True, False), ("whole suite, forked", True, True),
        ("selected tests, fresh interpreter", False, False), ("selected tests, forked", False, True)]
"""(name, whole suite, forked). The first runs every candidate as the generator would without test selection."""


def measure(cfg: Config) -> dict[str, Any]:
    cfg.validate()
    gcfg = GenerateConfig(seed=cfg.seed, backend=cfg.backend, progress=False)
    with tempfile.TemporaryDirectory(prefix="fixrl-bench-gen-") as tmp, \
            LocalRunner(cfg.workers, backend=cfg.backend) as runner, GenProgress(None, show=False) as progress:
        work = _open_work(Path(cfg.repo).resolve(), Path(tmp))  # type: ignore[arg-type]
        _write_plugins(work)
        journal = Journal(Path(tmp) / "journal.jsonl", {})
        try:
            scanned = scan(work, gcfg)
            t0 = time.monotonic()
            base = baseline(runner, work, cfg.test_cmd, gcfg, journal, progress)
            baseline_wall = time.monotonic() - t0
        except GenerateError as e:
            raise BenchError(f"bench generate: {e}") from None
        finally:
            journal.close()
        if base.cover is None:
            raise BenchError("bench generate: the coverage run recorded nothing; no selection to measure")
        full_timeout = min(600.0, 5.0 + 3 * base.seconds)
        selection = plan_selection(scanned.candidates, scanned, base, full_timeout)
        for c in scanned.candidates:
            c.select = selection.tests[c.function]
        timeouts = selection.timeouts
        order = round_robin(scanned.candidates, random.Random(cfg.seed))
        chosen = [c for c in order if c.select is None or c.select][: cfg.candidates]
        arms = _run_arms(runner, work, chosen, cfg, base.stable, full_timeout, timeouts)
    return _figures(cfg, arms, chosen, base, baseline_wall, selection, len(order))


def _run_arms(runner: LocalRunner, work: Path, chosen: list[Candidate], cfg: Config, stable: list[str],
              full_timeout: float, timeouts: dict[str, float]) -> list[dict]:
    arms = [{"name": n, "whole": w, "fork": f, "seconds": 0.0, "status": {}} for n, w, f in ARMS]
    # Chunks long enough that waiting for a chunk's slowest run (a whole-suite one) costs little.
    chunk = max(4, 5 * cfg.workers)
    for k, i in enumerate(range(0, len(chosen), chunk)):
        part = chosen[i:i + chunk]
        for j in range(len(arms)):
            arm = arms[(j + k) % len(arms)]  # each arm goes first in turn
            start = time.monotonic()
            futures = {}
            for c in part:
                whole = arm["whole"] or c.select is None
                job = TestJob(cfg.test_cmd, full_timeout if whole else timeouts.get(c.key, full_timeout),
                              c.file, c.mutant.source, select=None if whole else tuple(sorted(c.select or ())),
                              fork=arm["fork"], plain_asserts=not whole)
                futures[runner.submit(run_job, work, job, seconds=3 * full_timeout)] = (c, whole)
            wait(list(futures))
            arm["seconds"] += time.monotonic() - start
            for fut, (c, whole) in futures.items():
                expected = stable if whole else sorted(c.select or ())
                try:
                    rec = run_record(fut.result(), expected, whole)
                    arm["status"][c.key] = run_status(rec, len(stable), 0.5)
                except Exception as e:  # noqa: BLE001 - a sandbox failure is shown, not a verdict
                    arm["status"][c.key] = f"infrastructure: {type(e).__name__}"
    return arms


def _detects(status: str) -> bool:
    return status in ("broke", "not_local")


def _figures(cfg: Config, arms: list[dict], chosen: list[Candidate], base, baseline_wall: float,
             report: Selection, total: int) -> dict[str, Any]:
    n = len(chosen)
    ref = arms[0]
    rows = []
    for arm in arms:
        per_min = 60 * n / arm["seconds"] if arm["seconds"] > 0 else 0.0
        whole = next(a for a in arms if a["whole"] and a["fork"] == arm["fork"])
        misses = [k for k in arm["status"] if _detects(whole["status"].get(k, "")) and not _detects(arm["status"][k])]
        differs = [k for k in arm["status"] if arm["status"][k] != whole["status"].get(k)]
        rows.append({"arm": arm["name"], "seconds": round(arm["seconds"], 2), "candidates_per_min": round(per_min, 1),
                     "speedup": round(ref["seconds"] / arm["seconds"], 2) if arm["seconds"] else None,
                     "detected": sum(_detects(s) for s in arm["status"].values()), "misses": len(misses),
                     "differs": len(differs), "missed": misses[:5],
                     "differed": {k: [arm["status"][k], whole["status"].get(k)] for k in differs[:5]}})
    full_fork = next(a for a in arms if a["whole"] and a["fork"])
    sel_fork = arms[-1]
    broke = sum(s == "broke" for s in sel_fork["status"].values())
    with_kept = sel_fork["seconds"] + broke * full_fork["seconds"] / max(1, n)
    sizes = [len(c.select) for c in chosen if c.select]
    return {
        "repo": str(cfg.repo), "test_cmd": cfg.test_cmd, "workers": cfg.workers, "backend": cfg.backend,
        "candidates": n, "candidates_in_repo": total, "tests": len(base.stable),
        "baseline_seconds": round(base.seconds, 2), "coverage_run_seconds": round(base.cover_seconds, 2),
        "baseline_and_coverage_wall": round(baseline_wall, 2),
        "functions_covered": report.functions_covered, "functions_at_import": report.functions_at_import,
        "functions_uncovered": report.functions_uncovered,
        "mean_selected_tests": round(sum(sizes) / len(sizes), 1) if sizes else 0.0,
        "whole_suite_candidates": sum(c.select is None for c in chosen),
        "arms": rows,
        "with_kept_runs": {"broke": broke, "seconds": round(with_kept, 2),
                           "candidates_per_min": round(60 * n / with_kept, 1) if with_kept else 0.0,
                           "speedup": round(ref["seconds"] / with_kept, 2) if with_kept else None},
    }


def show(result: dict[str, Any], console) -> None:
    console.print(f"[bold]fixrl bench generate[/bold]: {result['repo']} ({result['tests']} tests, "
                  f"`{result['test_cmd']}`), {result['candidates']} of {result['candidates_in_repo']} candidates, "
                  f"{result['workers']} workers, {result['backend']} backend")
    console.print(f"baseline run {result['baseline_seconds']} s; coverage run {result['coverage_run_seconds']} s "
                  f"(once per generation); {result['functions_covered']} functions covered, "
                  f"{result['functions_at_import']} run at import, {result['functions_uncovered']} by no test; "
                  f"{result['mean_selected_tests']} tests per selection; {result['whole_suite_candidates']} "
                  "candidates run the whole suite anyway")
    table = Table(title="candidates per minute (same candidates, same run)")
    for col in ("arm", "seconds", "cand/min", "vs first", "detected", "misses", "differs"):
        table.add_column(col, justify="left" if col == "arm" else "right")
    for r in result["arms"]:
        table.add_row(r["arm"], f"{r['seconds']:.1f}", f"{r['candidates_per_min']:.1f}", f"{r['speedup']:.2f}x",
                      str(r["detected"]), str(r["misses"]), str(r["differs"]))
    k = result["with_kept_runs"]
    table.add_row("selected, forked + kept bugs' whole-suite runs", f"{k['seconds']:.1f}",
                  f"{k['candidates_per_min']:.1f}", f"{k['speedup']:.2f}x", str(k["broke"]), "", "")
    console.print(table)

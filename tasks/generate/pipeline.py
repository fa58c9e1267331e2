"""`fixrl tasks generate`: bug-fix tasks from any Python repository with a pytest suite, made the
way SWE-smith makes its procedural bugs. This module is the job, read top to bottom in
`_generate`: each stage is a function of its own module that returns a typed result, and the
yield report is made from those results at the end.

    fixrl tasks generate --repo DIR --test-cmd "python -m pytest -q" --out SUITE [--max N] [--seed S]
        [--files GLOB...] [--functions NAME...] [--operators OP...] [--exclude-private]
        [--max-per-function K] [-j WORKERS] [--ray auto|ADDRESS]

1. Baseline (`baseline.py` -> `Baseline`): the repository's tests run twice in sandboxes; a test
   that fails in both runs is excluded (never judged, listed in the report), one that passes in
   only one is unstable (never judged); too many excluded tests refuse the repository. A small pytest plugin, put
   beside the repository copy, records each test's outcome and failure (node id, crash message,
   traceback lines); the second run also records which tests run which code (tasks.generate.coverage).
2. Candidates (`scan.py` -> `Scan`): every single-site mutant (`tasks.generate.mutate`) of every
   function of the non-test files (or of those the targeting flags name), ordered round-robin
   over modules, over the functions of a module and over the families of a function (seeded,
   `order.py`), so any prefix is spread.
3. Search (`search.py` -> `Selection`, `SearchResult`): each candidate runs the tests that cover
   its function, in a pooled sandbox, many at once; one that breaks some runs the whole suite
   once, which decides it. Kept: it breaks at least one test and at most `max_broken_frac` of
   them (a local bug), and its function holds fewer than `max_per_function` kept bugs. Dropped:
   duplicates (same text), equivalents (nothing breaks), non-local bugs, timeouts, import errors;
   not run: functions no test covers. Every outcome is journaled (OUT/generate.journal.jsonl): a
   killed run, run again, picks up where it stopped and ends with the suite an uninterrupted run makes.
4. Tasks written (`write.py` -> `Written`): each kept bug becomes a task: the hidden check runs
   the broken tests (FAIL_TO_PASS, from the whole-suite run) plus a sample of still-passing ones
   (PASS_TO_PASS) by node id, with the test files copied in as check files; the issue describes
   a symptom from a failing test (`tasks.generate.issue`); train / heldout are split by
   function; bug and fix are unified diffs.
5. Validation (`validation.py` -> `Validation`): the public command runs once on the clean
   repository through the check's runner and guard, and a test only the guard fails or stops is
   excluded from it (`parity.py`); every task is validated (`tasks.check.validate`);
   invalid ones are dropped and counted. A yield report (`report.py`: per operator, candidates,
   tested, broke tests, kept, valid) is printed and saved as `generate_report.json` in the
   suite; progress goes to stderr and to OUT/generate.log.

The suite directory gets `repo/` (the clean repository, unless it is already there),
`suite.yaml` (created, or its `rename_pool` updated), `tasks/generated/*.yaml` and
`checks/generated/`; both generated folders are replaced on every run, so hand-written tasks
elsewhere in the suite are left alone. Tasks are written and validated in a staging folder
(OUT/.generate-stage, `staging.py`) and moved into place at the end: a run that fails or is
killed leaves the previous suite as it was, and so does one that ends with no valid task (only
its report, log and journal are written: no `suite.yaml`, no `repo/`).

What this does not guarantee: that a bug is interesting (a kept mutant only breaks tests), nor
that its issue text is a full description (one or two symptoms from the failing tests), nor
that test selection finds every candidate the whole suite would detect (tasks.generate.coverage says
what it cannot see; a candidate it misses is dropped as equivalent, never kept wrongly).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from fixrl.sandbox.environment import EnvBuildError, build_environment
from fixrl.tasks.format.environment import detect_environment, spec_of
from fixrl.tasks.format.loader import load_suite_config
from fixrl.tasks.generate.baseline import Baseline, baseline
from fixrl.tasks.generate.commands import pytest_parts
from fixrl.tasks.generate.config import GenerateConfig, GenerateError
from fixrl.tasks.generate.coverage import COVER_PLUGIN, COVER_SOURCE
from fixrl.tasks.generate.execute import GEN_DIR, PLUGIN, LocalRunner, Runner, compile_workspace, plugin_source
from fixrl.tasks.generate.journal import JOURNAL_NAME, Journal, tree_hash
from fixrl.tasks.generate.mutate import OPERATORS
from fixrl.tasks.generate.progress import GenProgress
from fixrl.tasks.generate.report import REPORT_NAME, GenerateReport, RunInfo, Stages, yield_report
from fixrl.tasks.generate.scan import copy_repo, scan
from fixrl.tasks.generate.search import Selection, plan_selection, search_candidates
from fixrl.tasks.generate.staging import STAGE_DIR, TRASH_DIR, publish, write_atomic
from fixrl.tasks.generate.validation import validate_tasks
from fixrl.tasks.generate.write import write_tasks

__all__ = ["generate", "check_inputs", "GEN_DIR", "PLUGIN", "PLUGIN_SOURCE"]

LOG_NAME = "generate.log"


# ---------------------------------------------------------------------------------------------
# The pytest plugin that reports each test's outcome and failure as JSON (pytest >= 7)

PLUGIN_SOURCE = plugin_source()


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
    repo, out = check_inputs(Path(repo), Path(out), test_cmd, cfg)
    workers = runner.width if runner is not None else (cfg.workers or max(1, os.cpu_count() or 1))
    run = RunInfo(given[0], given[1], test_cmd, workers, journal=str(out / JOURNAL_NAME), log=str(out / LOG_NAME))
    created = not out.exists()
    existed = {p for p in (out / JOURNAL_NAME, out / LOG_NAME) if p.exists()}
    try:
        stages = _generate(repo, test_cmd, out, cfg, runner, workers)
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
    report = yield_report(run, cfg, stages, seconds=round(time.monotonic() - t0, 1))
    write_atomic(out / REPORT_NAME, json.dumps(report.to_json(), indent=2) + "\n")
    return report


def _generate(repo: Path, test_cmd: str, out: Path, cfg: GenerateConfig, runner: Runner | None,
              workers: int) -> Stages:
    """The job, stage by stage (numbered as in the module docstring)."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fixrl-gen-") as tmp, \
            GenProgress(out / LOG_NAME, cfg.progress, cfg.progress_every) as progress:
        progress.note(f"fixrl tasks generate: {repo} -> {out} ({test_cmd!r}, seed {cfg.seed}, "
                      f"{workers} workers)")
        work = _open_work(repo, Path(tmp))
        env, env_tag = _environment(repo, out, cfg, progress)
        if runner is not None and env_tag and getattr(getattr(runner, "pool", None), "image", None) != env_tag:
            raise GenerateError(f"the repository needs its environment {env_tag}, which this runner's sandboxes "
                                "do not run (a Ray cluster's do not yet): run without --ray, or pass "
                                "--environment none if its tests need no packages")
        inputs = {"repo": tree_hash(work, {GEN_DIR}), "test_cmd": test_cmd, "backend": cfg.backend}
        journal = Journal(out / JOURNAL_NAME, {**inputs, "environment": env_tag} if env_tag else inputs)
        if journal.restarted:
            progress.note(f"the journal {journal.path.name} was started afresh: {journal.restarted}")
        own = runner is None
        runner = runner or LocalRunner(workers, backend=cfg.backend, image=env_tag)
        try:
            _write_plugins(work)
            scanned = scan(work, cfg)  # 2, before 1: bad targeting flags fail before any test runs
            progress.note(f"{len(scanned.candidates)} candidates in {scanned.functions} functions of "
                          f"{len(scanned.files)} file(s)")
            base = baseline(runner, work, test_cmd, cfg, journal, progress)  # 1
            selection = plan_selection(scanned.candidates, scanned, base, base.full_timeout)
            progress.note(_baseline_line(base, selection))
            # One seeded stream: the search's order, then the issues, the choice, the split and the checks.
            rng = random.Random(cfg.seed)
            searched = search_candidates(scanned, base, selection, runner, work, test_cmd, cfg, journal,
                                         progress, rng)  # 3
        finally:
            if own:
                runner.close()
            journal.close()
        written = write_tasks(searched.kept, scanned, base, work, repo, out, test_cmd, cfg, rng, env)  # 4
        validation = validate_tasks(written, base, test_cmd, cfg, progress)  # 5
        valid = len(written.tasks) + validation.spares_validated - len(validation.invalid)
        if valid:
            publish(written.stage, out, written.suite_config)
            progress.note(f"done: {valid} valid tasks ({len(validation.invalid)} invalid)")
        else:
            # A suite of no tasks is no suite: no suite.yaml, no repo/, earlier tasks left as they were.
            progress.note(f"done: no valid tasks ({len(validation.invalid)} invalid); {out} gets no suite "
                          f"(see {REPORT_NAME} for why)")
    return Stages(scanned, base, selection, searched, written, validation)


def _environment(repo: Path, out: Path, cfg: GenerateConfig, progress: GenProgress) -> tuple[dict | None, str | None]:
    """The suite's environment (its suite.yaml's, else detected; none with `environment: none`),
    built for the run's backend; (its mapping, its tag), (None, None) without one."""
    if cfg.environment not in ("auto", "none"):
        raise GenerateError(f"--environment {cfg.environment!r}: use auto or none")
    if cfg.environment == "none":
        return None, None
    existing = load_suite_config(out).environment if (out / "suite.yaml").is_file() else None
    env = existing.model_dump(exclude_defaults=True) if existing is not None else detect_environment(repo)
    if env is None:
        return None, None
    try:
        built = spec_of(env, repo)
        progress.note(f"environment {built.tag()}: {env}")
        tag = build_environment(built, cfg.backend, progress.note)
    except (EnvBuildError, ValueError) as e:
        raise GenerateError(f"the repository's environment {env} could not be built: {e} (fix it in "
                            f"{out / 'suite.yaml'} under `environment:`, or pass --environment none)") from None
    return env, tag


def _baseline_line(base: Baseline, selection: Selection) -> str:
    return f"baseline: {len(base.stable)} tests pass ({base.seconds:.1f} s); " + (
        f"selection: {selection.functions_covered} functions covered, {selection.functions_at_import} run at "
        f"import (whole suite), {selection.functions_uncovered} by no test" if base.cover else "no selection: "
        "every candidate runs the whole suite")


def check_inputs(repo: Path, out: Path, test_cmd: str, cfg: GenerateConfig) -> tuple[Path, Path]:
    """`repo` and `out` resolved; GenerateError for inputs no run could use."""
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
    if not cfg.baseline_timeout > 0:
        raise GenerateError(f"--baseline-timeout must be a number of seconds > 0, got {cfg.baseline_timeout}")
    if not 0 <= cfg.max_baseline_failures <= 1:
        raise GenerateError(f"--max-baseline-failures must be in [0, 1], got {cfg.max_baseline_failures}")
    if cfg.max_per_function is not None and cfg.max_per_function < 1:
        raise GenerateError(f"--max-per-function must be at least 1, got {cfg.max_per_function}")
    for op in cfg.ops or []:
        if op not in OPERATORS:
            raise GenerateError(f"unknown operator {op!r}; known: {', '.join(OPERATORS)}")
    pytest_parts(test_cmd)
    return repo, out


def _open_work(repo: Path, tmp: Path) -> Path:
    work = tmp / "repo"
    copy_repo(repo, work)
    return work


def _write_plugins(work: Path) -> None:
    """The generator's plugins beside the repository copy, and the copy byte-compiled
    (gen_exec.compile_workspace: test runs then compile only a mutant's file)."""
    (work / GEN_DIR).mkdir(exist_ok=True)
    (work / GEN_DIR / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    (work / GEN_DIR / f"{COVER_PLUGIN}.py").write_text(COVER_SOURCE, encoding="utf-8")
    compile_workspace(work)

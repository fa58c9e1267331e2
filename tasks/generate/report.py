"""The generator's yield report, made at the end of a run from what each stage returned: per
operator candidates, tested, broke tests, kept, valid; saved as `generate_report.json` in the
suite and printed as a table.

What this does not guarantee: counts of an interrupted run (a run that fails writes no report;
its journal keeps the outcomes for the next one)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from rich.console import Console
from rich.table import Table

from fixrl.tasks.generate.baseline import Baseline
from fixrl.tasks.generate.candidate import TESTED
from fixrl.tasks.generate.config import GenerateConfig
from fixrl.tasks.generate.mutate import OPERATORS
from fixrl.tasks.generate.scan import Scan
from fixrl.tasks.generate.search import SearchResult, Selection
from fixrl.tasks.generate.validation import Validation
from fixrl.tasks.generate.write import Written

REPORT_NAME = "generate_report.json"


@dataclass(frozen=True)
class OpStats:
    """One operator's (family's) yield, stage by stage."""

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


@dataclass(frozen=True)
class GenerateReport:
    """The yield report of one run (`generate_report.json`; its fields and their order are the
    file's, so earlier reports still read)."""

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
    flaky: int = 0
    """Tasks dropped because their check was not stable over the validation's repeated runs."""
    no_issue_reasons: dict[str, int] = field(default_factory=dict)
    """Why kept bugs got no issue text, with how many."""
    task_ids: list[str] = field(default_factory=list)
    # since issue 22
    selection: bool = True
    """Candidates ran their covering tests (False: the whole suite each)."""
    coverage_seconds: float = 0.0
    functions_covered: int = 0
    functions_at_import: int = 0
    """Functions that run at import and in no test: their candidates run the whole suite."""
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
    # since issue 32
    excluded_tests: dict[str, object] = field(default_factory=dict)
    """Tests that failed on the unmodified repository, never judged: `count`, and `tests` (id ->
    the first line of its error)."""
    spares_validated: int = 0
    """Tasks validated beyond `--max` to take the place of invalid ones."""
    guard_excluded_tests: dict[str, object] = field(default_factory=dict)
    """Tests excluded from the public command because only the check's guard fails or stops
    them on the unmodified repository (`parity.py`): `count`, and `tests` (id -> why)."""
    guarded_public_seconds: float | None = None
    """The public command's seconds run as the `test` tool runs it, on the unmodified repository
    (None: not run, or the guard found something in every run)."""

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Stages:
    """What each stage of one run returned: the yield report is made from these."""

    scan: Scan
    baseline: Baseline
    selection: Selection
    search: SearchResult
    written: Written
    validation: Validation


@dataclass(frozen=True)
class RunInfo:
    """What the report says about the run itself (its inputs, where its files are)."""

    repo: str
    """--repo as given."""
    out: str
    """--out as given."""
    test_cmd: str
    workers: int
    journal: str
    log: str


def yield_report(run: RunInfo, cfg: GenerateConfig, s: Stages, seconds: float) -> GenerateReport:
    """The report of a finished run, from its stages' results."""
    per_op = {op: _op_stats(op, s) for op in (cfg.ops or OPERATORS)}
    written, invalid = s.written.tasks + s.validation.spares, s.validation.invalid
    task_ids = sorted(t.id for t in written if t.id not in invalid)
    heldout = sum(1 for t in written if t.id not in invalid and t.candidate.function in s.written.held)
    no_issue_reasons: dict[str, int] = {}
    for _, why in s.written.no_issue:
        no_issue_reasons[why] = no_issue_reasons.get(why, 0) + 1

    def total(name: str) -> int:
        return sum(getattr(st, name) for st in per_op.values())

    return GenerateReport(
        run.repo, run.out, run.test_cmd, cfg.seed, tests=len(s.baseline.stable),
        baseline_seconds=round(s.baseline.seconds, 3), files=len(s.scan.files), functions=s.scan.functions,
        candidates=len(s.scan.candidates), tested=total("tested"), broke=total("broke"), kept=len(s.search.kept),
        selected=len(s.written.chosen) + s.validation.spares_validated, valid=total("valid"), invalid=total("invalid"),
        train=len(task_ids) - heldout, heldout=heldout, seconds=seconds, per_op=per_op,
        invalid_reasons=dict(invalid), flaky=len(s.validation.flaky), no_issue_reasons=no_issue_reasons,
        task_ids=task_ids,
        selection=s.baseline.cover is not None, coverage_seconds=s.baseline.cover_seconds,
        functions_covered=s.selection.functions_covered, functions_at_import=s.selection.functions_at_import,
        functions_uncovered=s.selection.functions_uncovered, opaque_tests=s.selection.opaque_tests,
        mean_selected_tests=s.search.mean_selected_tests, full_runs=s.search.full_runs,
        uncovered=total("uncovered"), capped=total("capped"), reused=s.search.reused, workers=run.workers,
        candidates_per_minute=s.search.candidates_per_minute, max_per_function=cfg.max_per_function,
        targets={"files": cfg.files, "functions": cfg.functions, "operators": cfg.ops,
                 "exclude_private": cfg.exclude_private},
        journal=run.journal, log=run.log,
        excluded_tests={"count": len(s.baseline.excluded), "tests": dict(sorted(s.baseline.excluded.items()))},
        spares_validated=s.validation.spares_validated,
        guard_excluded_tests={"count": len(s.validation.parity.excluded), "tests": s.validation.parity.excluded},
        guarded_public_seconds=s.validation.parity.seconds)


def _op_stats(op: str, s: Stages) -> OpStats:
    """One family's yield: what each stage did with its candidates."""
    status = [c.status for c in s.search.order if c.mutant.op == op]
    tested = [x for x in status if x in TESTED]
    written = [t for t in s.written.tasks + s.validation.spares if t.candidate.mutant.op == op]
    invalid = sum(t.id in s.validation.invalid for t in written)
    return OpStats(
        candidates=sum(c.mutant.op == op for c in s.scan.candidates), tested=len(tested),
        broke=sum(x in ("kept", "not_local") for x in tested), equivalent=tested.count("equivalent"),
        not_local=tested.count("not_local"), timeout=tested.count("timeout"), error=tested.count("error"),
        kept=tested.count("kept"), no_issue=sum(c.mutant.op == op for c, _ in s.written.no_issue),
        selected=len(written), valid=len(written) - invalid, invalid=invalid,
        uncovered=status.count("uncovered"), capped=status.count("capped"))


# ---------------------------------------------------------------------------------------------
# Output

def column_chunks(heads: list[str], rows: list[list[str]], width: int) -> list[list[int]]:
    """The column indices of each table a wide table is split into so that each fits `width`
    characters whole (a narrow terminal would otherwise shrink every header to `o…`); the first
    column (the row's name) is repeated in each."""
    need = [max(len(h), *(len(r[i]) for r in rows)) + 3 for i, h in enumerate(heads)]   # + rich's padding, border
    chunks: list[list[int]] = [[0]]
    used = need[0] + 1
    for i in range(1, len(heads)):
        if used + need[i] > width and len(chunks[-1]) > 1:
            chunks.append([0])
            used = need[0] + 1
        chunks[-1].append(i)
        used += need[i]
    return chunks


def print_report(report: GenerateReport, console=None) -> None:
    """The yield table and the run's summary lines, on `console` (default: stdout)."""
    console = console or Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 150))
    cols = ["candidates", "tested", "broke", "equivalent", "not_local", "timeout", "error", "uncovered", "capped",
            "kept", "no_issue", "selected", "valid", "invalid"]
    heads = ["cands", "tested", "broke", "equiv", "nonlocal", "timeout", "error", "uncov", "capped", "kept",
             "no issue", "selected", "valid", "invalid"]
    rows = [[op, *(str(getattr(st, col)) for col in cols)] for op, st in report.per_op.items()]
    total = ["total", *(str(sum(getattr(s, col) for s in report.per_op.values())) for col in cols)]
    title = f"fixrl tasks generate: yield ({report.tests} tests, baseline {report.baseline_seconds:.2f} s)"
    for part, chunk in enumerate(column_chunks(["operator", *heads], [*rows, total], console.width)):
        table = Table(title=title if part == 0 else None)
        for i in chunk:
            table.add_column(["operator", *heads][i], justify="left" if i == 0 else "right", no_wrap=True)
        for row in rows:
            table.add_row(*(row[i] for i in chunk))
        table.add_row(*(total[i] for i in chunk), style="bold")
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
    excluded = report.excluded_tests.get("tests") or {}
    if excluded:
        console.print(f"{len(excluded)} test(s) fail on the unmodified repository, excluded from every check:")
        for nodeid, line in list(excluded.items())[:10]:  # type: ignore[union-attr]
            console.print(f"  excluded {nodeid}" + (f": {line}" if line else ""), markup=False, highlight=False)
        if len(excluded) > 10:
            console.print(f"  ... and {len(excluded) - 10} more (generate_report.json lists them all)")
    guarded = report.guard_excluded_tests.get("tests") or {}
    if guarded:
        console.print(f"{len(guarded)} test(s) fail or stop only under the check's guard on the unmodified "
                      "repository, excluded from the public command:")
        for nodeid, why in list(guarded.items())[:10]:  # type: ignore[union-attr]
            console.print(f"  excluded {nodeid}: {why}", markup=False, highlight=False)
        if len(guarded) > 10:
            console.print(f"  ... and {len(guarded) - 10} more (generate_report.json lists them all)")
    if report.spares_validated:
        console.print(f"{report.spares_validated} spare task(s) validated in place of invalid ones")
    if report.flaky:
        console.print(f"{report.flaky} task(s) dropped: their check was not stable over the validation's runs")
    for tid, why in sorted(report.invalid_reasons.items()):
        console.print(f"  dropped {tid}: {why}")
    for why, n in sorted(report.no_issue_reasons.items(), key=lambda x: (-x[1], x[0])):
        console.print(f"  no issue for {n} kept bug(s): {why}")

"""fixrl bench check: what the check's runtime guard costs per check -- the same reference fixes
judged with the guard and without it, interleaved in the same run, on the rollouts' forking
check sandbox, a fresh local interpreter per check, or Docker. With `--public`, the `test`
tool's run instead: each task's public test command (usually the repository's whole suite)
through the check's runner and guard, against the same command run as it is."""
from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.table import Table

from fixrl.harness.bench.errors import BenchError
from fixrl.sandbox import Sandbox, SandboxPool
from fixrl.tasks.check.guard import GuardSpec, frame_readers, python_changes, spec_for
from fixrl.tasks.check.reward import GUARD_STOPPED, run_public_tests
from fixrl.tasks.check.run import run_check
from fixrl.tasks.format.loader import load_suite
from fixrl.tasks.format.materialize import materialize
from fixrl.tasks.format.schema import Task


@dataclass
class Config:
    """`fixrl bench check`."""

    backend: Literal["forking", "local", "docker"] = "forking"
    """Where checks run: forking (the rollouts' local check sandboxes), local (a fresh
    interpreter per check), docker (a reused container)."""
    suite: str | None = None
    """Suite directory (None: the built-in gym suite)."""
    tasks: int = 4
    """Tasks whose reference fix is judged (the suite's first fix tasks)."""
    repeats: int = 5
    """Checks per task and arm, interleaved (guarded, unguarded, guarded, ...)."""
    public: bool = False
    """Time the `test` tool's run instead of the hidden check: the public test command through
    the check's runner and guard (the reference fix's files as the changed ones) against the
    command as it is (`sb.exec`)."""

    def validate(self) -> None:
        if self.tasks < 1 or self.repeats < 1:
            raise BenchError(f"bench check: tasks ({self.tasks}) and repeats ({self.repeats}) must be >= 1")


def _suite_dir(cfg: Config) -> Path:
    if cfg.suite is not None:
        return Path(cfg.suite)
    from fixrl.tasks.suites import GYM_SUITE  # noqa: PLC0415 - the built-in suites' paths, on demand

    return GYM_SUITE


def measure(cfg: Config) -> dict[str, Any]:
    """Median seconds per check with and without the guard, and their ratio."""
    cfg.validate()
    suite = load_suite(_suite_dir(cfg))
    chosen = [t for t in suite.tasks if t.kind == "fix" and t.fix][: cfg.tasks]
    if not chosen:
        raise BenchError(f"bench check: the suite {suite.dir} has no fix task")
    times: dict[bool, list[float]] = {True: [], False: []}
    verdicts: dict[bool, list[str]] = {True: [], False: []}
    backend = "docker" if cfg.backend == "docker" else "local"
    with tempfile.TemporaryDirectory(prefix="fixrl-bench-check-") as tmp, \
            SandboxPool(1, backend=backend, forking=cfg.backend == "forking") as pool:
        for i, task in enumerate(chosen):
            buggy = materialize(task, Path(tmp) / f"{i}-buggy", "buggy")
            fixed = materialize(task, Path(tmp) / f"{i}-fixed", "fixed")
            changes = python_changes(buggy, fixed)  # read once: the spec and the public arm's edit
            spec = spec_for(changes, frame_readers(buggy))
            with pool.acquire(fixed, image=task.sandbox_image) as sb:
                _run(cfg, task, sb, spec, changes, True)  # warm: the first run pays for start-ups
                for _ in range(cfg.repeats):
                    for guarded in (True, False):
                        t0 = time.perf_counter()
                        verdicts[guarded].append(_run(cfg, task, sb, spec, changes, guarded))
                        times[guarded].append(time.perf_counter() - t0)
    on, off = statistics.median(times[True]), statistics.median(times[False])
    return {"backend": cfg.backend, "public": cfg.public, "tasks": len(chosen), "checks_per_arm": len(times[True]),
            "guarded_median_s": round(on, 4), "unguarded_median_s": round(off, 4),
            "ratio": round(on / off, 3), "guarded_verdicts": sorted(set(verdicts[True])),
            "unguarded_verdicts": sorted(set(verdicts[False]))}


def _run(cfg: Config, task: Task, sb: Sandbox, spec: GuardSpec, changes: dict[str, tuple[str | None, str]],
         guarded: bool) -> str:
    """One timed arm's run; its verdict: the check's outcome, or the public run's exit status
    (and whether the guard stopped it)."""
    if not cfg.public:
        return run_check(task, sb, guard=spec, guarded=guarded).outcome
    timeout = task.limits.tool_timeout
    if not guarded:
        res = sb.exec(task.public_tests, timeout=timeout)
        return "timed out" if res.timed_out else f"exit {res.exit_code}"
    got = run_public_tests(task, sb, task.public_tests, timeout, {p: new for p, (_old, new) in changes.items()})
    if got.timed_out:
        return "timed out"
    return "guard stopped" if got.reason.startswith(GUARD_STOPPED) else f"exit {got.exit_code}"


def show(result: dict[str, Any], console) -> None:
    what = "public test run" if result.get("public") else "check"
    table = Table(title=f"{what} with and without the runtime guard ({result['backend']}, "
                        f"{result['tasks']} tasks, {result['checks_per_arm']} runs per arm)")
    table.add_column("arm")
    table.add_column(f"median s/{'run' if result.get('public') else 'check'}", justify="right")
    table.add_column("verdicts")
    table.add_row("guarded", f"{result['guarded_median_s']:.3f}", ", ".join(result["guarded_verdicts"]))
    table.add_row("unguarded (baseline)", f"{result['unguarded_median_s']:.3f}",
                  ", ".join(result["unguarded_verdicts"]))
    console.print(table)
    console.print(f"guard cost: [bold]{result['ratio']:.2f}x[/bold] per {what}")

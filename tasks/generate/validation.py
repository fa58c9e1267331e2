"""Stage 5 of the generator, validation: first the suite's public command is run the way the
`test` tool runs it, and tests only the check's guard fails there are excluded from it
(`parity.py`); then every staged task is validated (`tasks.check.validate`:
its check fails on the bug, passes with the fix, gives the same verdict on every repeat, and the
public tests run); an invalid one is removed from the staging folder and counted, and its slot
goes to the next spare (a kept bug beyond `--max`, `Written.spares`), validated in turn, until
`--max` tasks are valid or the spares run out; spares never validated are removed.

What this does not guarantee: that a valid task stays valid on another machine (a check near its
timeout, a test that depends on the environment)."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fixrl.tasks.check.validate import ValidationResult, validate_suite
from fixrl.tasks.format.loader import load_suite_config, load_task, task_defaults
from fixrl.tasks.format.schema import Suite
from fixrl.tasks.generate.baseline import Baseline
from fixrl.tasks.generate.config import GenerateConfig
from fixrl.tasks.generate.parity import Parity, guard_parity
from fixrl.tasks.generate.progress import GenProgress
from fixrl.tasks.generate.staging import remove_task
from fixrl.tasks.generate.write import Written, WrittenTask


@dataclass(frozen=True)
class Validation:
    """Stage 5's result: the tasks dropped, with why (every other written task is valid)."""

    invalid: dict[str, str]
    """Task id -> why it is invalid, in the order written."""
    flaky: frozenset[str] = frozenset()
    """The invalid tasks whose check gave different verdicts over the `repeats` runs of a state."""
    spares: list[WrittenTask] = field(default_factory=list)
    """The spares validated in the place of invalid tasks (valid or not), in the order validated."""
    parity: Parity = field(default_factory=Parity)
    """The tests excluded from the public command because only the check's guard fails them."""

    @property
    def spares_validated(self) -> int:
        return len(self.spares)


def validate_tasks(written: Written, base: Baseline, test_cmd: str, cfg: GenerateConfig,
                   progress: GenProgress) -> Validation:
    """Guard parity for the public command, then validate the staged tasks, remove the invalid
    ones and validate spares in their place (module docstring); with `--no-validate`, only the
    spares are removed."""
    if not (cfg.validate and written.tasks):
        for t in written.spares:
            remove_task(written.stage, t.id)
        return Validation({})
    parity = guard_parity(written, base, test_cmd, cfg, progress)
    # Validation runs here (a cluster runner tests candidates only): this machine's workers.
    jobs = cfg.workers or max(1, os.cpu_count() or 1)
    done = [0]
    invalid: dict[str, str] = {}
    flaky: set[str] = set()
    used: list[WrittenTask] = []
    batch, waiting = list(written.tasks), list(written.spares)
    progress.note(f"validating {len(batch)} tasks ({cfg.repeats} runs of the check per state)")
    while batch:
        total = done[0] + len(batch)

        def shown(res: ValidationResult, total: int = total) -> None:
            done[0] += 1
            verdict = "valid" if res.ok else "invalid: " + "; ".join(res.reasons)[:200]
            progress.note(f"validated {done[0]}/{total}: {res.task_id} {verdict} ({res.seconds:.0f} s)")

        verdicts = _validate(written.stage, [t.id for t in batch], cfg.backend, jobs, cfg.repeats, shown)
        lost = 0
        for t in batch:
            ok, why, unstable = verdicts.get(t.id, (False, "not validated", False))
            if not ok:
                lost += 1
                invalid[t.id] = why
                if unstable:
                    flaky.add(t.id)
                remove_task(written.stage, t.id)
        # Each invalid task's slot goes to the next spare, in the selection's order.
        batch, waiting = waiting[:lost], waiting[lost:]
        used += batch
        if batch:
            progress.note(f"{lost} task(s) invalid: validating {len(batch)} spare(s) in their place")
    for t in waiting:
        remove_task(written.stage, t.id)
    return Validation(invalid, frozenset(flaky), used, parity)


def _validate(out: Path, ids: list[str], backend: str, workers: int, repeats: int,
              progress: Callable[[ValidationResult], None]) -> dict[str, tuple[bool, str, bool]]:
    """task id -> (valid, why not, flaky), by `tasks.check.validate` (check fails on the bug, passes
    with the fix, the same verdict on every repeat, the public tests run)."""
    config = load_suite_config(out)
    loaded = []
    verdicts: dict[str, tuple[bool, str, bool]] = {}
    for tid in ids:
        try:
            loaded.append(load_task(out / "tasks" / "generated" / f"{tid}.yaml", task_defaults(config), out))
        except ValueError as e:
            verdicts[tid] = (False, f"does not load: {e}", False)
    suite = Suite(dir=out, name=config.name or out.name, tasks=loaded)
    for res in validate_suite(suite, backend=backend, jobs=workers, repeats=repeats, progress=progress):
        verdicts[res.task_id] = (res.ok, "; ".join(res.reasons), res.flaky)
    return verdicts

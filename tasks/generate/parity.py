"""Stage 5's first step, guard parity: the `test` tool's command must show, run the way the tool
and validation run it (the check's runner and runtime guard, `run_public_tests`), what the
baseline showed on the unmodified repository. A test the guard alone fails or stops there (a
false alarm on an unchanged test's own values: werkzeug's `LocalProxy` comparisons stopped every
public run of werkzeug and flask half-way) would show a correct fix as failing, every time:
such tests are excluded from the suite's public command like those the baseline excludes, each
with the guard's reason, and listed in the yield report.

One guarded run of the public command on the clean repository (the first staged task's fixed
state) per round: a test that failed or errored in it but passed in both baseline runs is
excluded; when the guard stopped the run, the test it was running is excluded and the command
runs again, up to `MAX_ROUNDS` runs. The run that found nothing is timed: the `test` tool gets
at least 10x it (the generator's limit from the unguarded baseline is 5 s + 30x that; the guard
costs 1.2x to 6.7x by library). A suite whose public command the user wrote is left as it is
(validation then reports a run the guard stops).

What this does not guarantee: that no check holds such a test (a task whose check does fails
validation and its slot goes to a spare), nor that a stop outside any test (collection, the
session's end) is resolved: validation reports it."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from fixrl.sandbox.pool import SandboxPool
from fixrl.tasks.check.reward import GUARD_STOPPED, run_public_tests
from fixrl.tasks.format.loader import load_suite_config, load_task, task_defaults
from fixrl.tasks.format.materialize import materialize
from fixrl.tasks.generate.baseline import BASELINE_TIMEOUT, Baseline
from fixrl.tasks.generate.config import GenerateConfig
from fixrl.tasks.generate.progress import GenProgress
from fixrl.tasks.generate.staging import dump_yaml, public_command, tool_timeout, write_atomic
from fixrl.tasks.generate.write import Written

MAX_ROUNDS = 5


@dataclass(frozen=True)
class Parity:
    """What the guarded public runs changed: the tests excluded (test -> the guard's reason) and
    the command written, if any."""

    excluded: dict[str, str] = field(default_factory=dict)
    command: str | None = None
    """The suite's new public command (None: unchanged)."""
    seconds: float | None = None
    """The guarded run's seconds, of the last run the guard found nothing in (None: none)."""


def guard_only(tests: dict[str, str], reason: str, stable: set[str]) -> dict[str, str]:
    """The tests one guarded run of the clean repository shows failing that the baseline shows
    passing (`tests`: node id -> outcome, in run order), each -> why; and, when the guard stopped
    the run, the test it was running."""
    found = {n: "fails only under the check's guard" for n, o in tests.items()
             if o in ("failed", "error") and n in stable}
    if reason.startswith(GUARD_STOPPED):
        # Stopped in a test's setup or call: its outcome is missing, like every test after it;
        # in its teardown: error, and it is the last test that reported anything.
        ran = [n for n, o in tests.items() if o != "missing"]
        running = ran[-1] if ran and tests[ran[-1]] == "error" else next(
            (n for n, o in tests.items() if o == "missing"), None)
        if running in stable:
            found[running] = "the check's guard stopped the run in it: " + reason[len(GUARD_STOPPED):][:300]
    return found


def guard_parity(written: Written, base: Baseline, test_cmd: str, cfg: GenerateConfig,
                 progress: GenProgress) -> Parity:
    """Exclude from the staged suite's public command the tests only the guard fails or stops
    on the clean repository (module docstring); the stage's suite.yaml and `written.suite_config`
    get the new command."""
    config = written.suite_config
    ours = public_command(test_cmd, sorted(base.excluded))
    if not (cfg.validate and written.tasks) or config.get("defaults", {}).get("public_tests") != ours:
        return Parity()
    stage = written.stage
    task = load_task(stage / "tasks" / "generated" / f"{written.tasks[0].id}.yaml",
                     task_defaults(load_suite_config(stage)), stage)
    stable, new, seconds = set(base.stable), {}, None
    with tempfile.TemporaryDirectory(prefix="fixrl-parity-") as tmp, \
            SandboxPool(1, backend=cfg.backend) as pool, \
            pool.acquire(materialize(task, Path(tmp) / "clean", "fixed"), image=task.sandbox_image) as sb:
        for _ in range(MAX_ROUNDS):
            command = public_command(test_cmd, sorted({*base.excluded, *new}))
            res = run_public_tests(task, sb, command, BASELINE_TIMEOUT, {})
            if res.outcome == "error" or res.timed_out:  # the sandbox's failure or time: validation tells
                progress.note(f"guard parity: the guarded public run did not finish ({res.reason[:200]})")
                break
            found = guard_only(res.tests, res.reason, stable - new.keys())
            if not found:
                seconds = res.seconds if not res.reason.startswith(GUARD_STOPPED) else None
                break
            new.update(found)
            first = next(iter(found))
            progress.note(f"guard parity: {len(found)} test(s) fail or stop only under the check's guard, "
                          f"excluded from the public command (e.g. {first}: {found[first]})")
    changed = {}
    if new:
        changed["public_tests"] = public_command(test_cmd, sorted({*base.excluded, *new}))
    limits = config["defaults"].get("limits", {})
    if seconds is not None and limits.get("tool_timeout") == tool_timeout(base.seconds, 30):
        # the generator's own limit: at least 10x the run the tool makes, timed here
        changed["tool_timeout"] = max(limits["tool_timeout"], tool_timeout(seconds, 10))
    if changed:
        staged = yaml.safe_load((stage / "suite.yaml").read_text(encoding="utf-8"))
        for conf in (config, staged):
            if "public_tests" in changed:
                conf["defaults"]["public_tests"] = changed["public_tests"]
            if "tool_timeout" in changed:
                conf["defaults"]["limits"]["tool_timeout"] = changed["tool_timeout"]
        write_atomic(stage / "suite.yaml", dump_yaml(staged))
    return Parity(dict(sorted(new.items())), changed.get("public_tests"), seconds)

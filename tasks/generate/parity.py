"""Stage 5's first step, guard parity: the `test` tool's command must show, run the way the tool
and validation run it (the check's runner and runtime guard, `run_public_tests`), what the
baseline showed on the unmodified repository. A test the guard alone fails or stops there (a
false alarm on an unchanged test's own values: werkzeug's `LocalProxy` comparisons stopped every
public run of werkzeug and flask half-way) would show a correct fix as failing, every time:
such tests are excluded from the suite's public command like those the baseline excludes, each
with the guard's reason, and listed in the yield report.

A guarded run of the public command on the clean repository (the first staged task's fixed
state): a test that failed or errored in it but passed in both baseline runs is excluded. When
the guard stopped the run, the test it was running is excluded and each test file the run did
not finish runs alone, again after each stop without the tests found so far (werkzeug and flask
compare `LocalProxy` objects in dozens of tests), up to `MAX_ROUNDS` file runs; then the whole
command once more. That last run, when the guard found nothing in it, is timed: the `test` tool gets
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

from fixrl.sandbox.base import Sandbox
from fixrl.sandbox.pool import SandboxPool
from fixrl.tasks.check.reward import GUARD_STOPPED, run_public_tests
from fixrl.tasks.check.run import CheckResult
from fixrl.tasks.format.loader import load_suite_config, load_task, task_defaults
from fixrl.tasks.format.materialize import materialize
from fixrl.tasks.format.schema import Task
from fixrl.tasks.generate.baseline import Baseline
from fixrl.tasks.generate.commands import check_command
from fixrl.tasks.generate.config import GenerateConfig
from fixrl.tasks.generate.progress import GenProgress
from fixrl.tasks.generate.staging import dump_yaml, public_command, tool_timeout, write_atomic
from fixrl.tasks.generate.write import Written

MAX_ROUNDS = 300
"""Guarded runs of single test files, at most, after the whole command's run stopped."""


@dataclass(frozen=True)
class Parity:
    """What the guarded public runs changed: the tests excluded (test -> the guard's reason) and
    the command written, if any."""

    excluded: dict[str, str] = field(default_factory=dict)
    command: str | None = None
    """The suite's new public command (None: unchanged)."""
    seconds: float | None = None
    """The guarded run's seconds, of the last run the guard found nothing in (None: none)."""


def guard_only(tests: dict[str, str], reason: str, stable: set[str], stopped_in: str | None = None
               ) -> dict[str, str]:
    """The tests one guarded run of the clean repository shows failing that the baseline shows
    passing (`tests`: node id -> outcome), each -> why; and the test the guard stopped the run
    in (`stopped_in`, the runner's report), an unstable one too: a stop ends every run it is in."""
    found = {n: "fails only under the check's guard" for n, o in tests.items()
             if o in ("failed", "error") and n in stable}
    if reason.startswith(GUARD_STOPPED) and stopped_in is not None:
        found[stopped_in] = "the check's guard stopped the run in it: " + reason[len(GUARD_STOPPED):][:300]
    return found


def guard_parity(written: Written, base: Baseline, test_cmd: str, cfg: GenerateConfig,
                 progress: GenProgress) -> Parity:
    """Exclude from the staged suite's public command the tests only the guard fails or stops
    on the clean repository (module docstring); the stage's suite.yaml and `written.suite_config`
    get the new command."""
    config = written.suite_config
    if not (cfg.validate and written.tasks) or \
            config.get("defaults", {}).get("public_tests") != public_command(test_cmd, sorted(base.excluded)):
        return Parity()
    stage = written.stage
    task = load_task(stage / "tasks" / "generated" / f"{written.tasks[0].id}.yaml",
                     task_defaults(load_suite_config(stage)), stage)
    with tempfile.TemporaryDirectory(prefix="fixrl-parity-") as tmp, \
            SandboxPool(1, backend=cfg.backend) as pool, \
            pool.acquire(materialize(task, Path(tmp) / "clean", "fixed"), image=task.sandbox_image) as sb:
        probe = _Probe(task, sb, test_cmd, base, progress, cfg.baseline_timeout)
        seconds = probe.timed_clean_run()
    changed = {}
    if probe.new:
        changed["public_tests"] = probe.command()
    limits = config["defaults"].get("limits", {})
    if seconds is not None and limits.get("tool_timeout") == tool_timeout(base.seconds, 30):
        # the generator's own limit: at least 10x the run the tool makes, timed here
        changed["tool_timeout"] = max(limits["tool_timeout"], tool_timeout(seconds, 10))
    if changed:
        _write_defaults(stage, config, changed)
    return Parity(dict(sorted(probe.new.items())), changed.get("public_tests"), seconds)


@dataclass
class _Probe:
    """Guarded public runs of the clean repository in one sandbox; `new` gathers the tests only
    the guard fails or stops (test -> why)."""

    task: Task
    sb: Sandbox
    test_cmd: str
    base: Baseline
    progress: GenProgress
    timeout: float
    """Seconds a run may take (the baseline's)."""
    new: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.stable = set(self.base.stable)

    def command(self, files: list[str] | None = None) -> str:
        """The public command (of `files` alone, if given) without the tests excluded so far."""
        cmd = check_command(self.test_cmd, files) if files else self.test_cmd
        return public_command(cmd, sorted({*self.base.excluded, *self.new}))

    def timed_clean_run(self) -> float | None:
        """Run the command, the files a stop left unfinished alone, and the command once more
        when tests were excluded; the last run's seconds when the guard found nothing in it."""
        res = self.run(self.command())
        if res is not None and res.reason.startswith(GUARD_STOPPED):
            self._files_alone(res)
        if self.new and res is not None:
            res = self.run(self.command())
        if res is None or res.reason.startswith(GUARD_STOPPED) or guard_only(res.tests, "", self.stable):
            return None
        return res.seconds

    def _files_alone(self, stopped: CheckResult) -> None:
        # A stop ends the run: each file not run to its end runs alone, again after each stop
        # without the test it stopped in (a stop is one test; a file is seconds).
        files = list(dict.fromkeys(n.split("::", 1)[0] for n, o in stopped.tests.items() if o == "missing"))
        runs = 0
        for path in files:
            while runs < MAX_ROUNDS:
                runs, known = runs + 1, len(self.new)
                alone = self.run(self.command([path]))
                if alone is None or not alone.reason.startswith(GUARD_STOPPED) or len(self.new) == known:
                    break  # the file ran to its end, or stopped where no test can be left out

    def run(self, command: str) -> CheckResult | None:
        """One guarded run; its new guard-only tests join `new`. None when it did not finish."""
        res = run_public_tests(self.task, self.sb, command, self.timeout, {})
        if res.outcome == "error" or res.timed_out:  # the sandbox's failure or time: validation tells
            self.progress.note(f"guard parity: a guarded run did not finish ({res.reason[:200]})")
            return None
        found = {n: why for n, why in guard_only(res.tests, res.reason, self.stable, res.stopped_in).items()
                 if n not in self.new}
        self.new.update(found)
        if found:
            first = next(iter(found))
            self.progress.note(f"guard parity: {len(found)} test(s) fail or stop only under the check's guard, "
                               f"excluded from the public command (e.g. {first}: {found[first]})")
        return res


def _write_defaults(stage: Path, config: dict, changed: dict) -> None:
    """Set `changed` (public_tests, tool_timeout) in the suite's defaults: in memory and in the
    stage's suite.yaml."""
    staged = yaml.safe_load((stage / "suite.yaml").read_text(encoding="utf-8"))
    for conf in (config, staged):
        if "public_tests" in changed:
            conf["defaults"]["public_tests"] = changed["public_tests"]
        if "tool_timeout" in changed:
            conf["defaults"]["limits"]["tool_timeout"] = changed["tool_timeout"]
    write_atomic(stage / "suite.yaml", dump_yaml(staged))

"""One generator run's settings (the `fixrl tasks generate` flags) and the error for bad input.

What this does not guarantee: that the settings make sense together; `pipeline.check_inputs`
checks them against the repository before a run starts."""
from __future__ import annotations

from dataclasses import dataclass


class GenerateError(ValueError):
    """Bad input for the generator (a repository without passing tests, a non-pytest command...)."""


@dataclass(frozen=True)
class GenerateConfig:
    """One generator run's settings (the `fixrl tasks generate` flags)."""

    max_tasks: int | None = None
    """At most this many tasks (None: one per kept bug)."""
    seed: int = 0
    """Orders candidates and samples checks, issues and the split."""
    backend: str = "local"
    """Sandbox backend of the test runs and the validation."""
    heldout_frac: float = 1 / 3
    """Share of functions whose tasks go to the heldout split."""
    workers: int | None = None
    """Test runs at once on this machine (default: its CPU count)."""
    max_baseline_failures: float = 0.1
    """Tests failing on the unmodified repository are excluded from every check; more than this
    share of them refuses the repository (`--max-baseline-failures`)."""
    baseline_timeout: float = 600.0
    """Seconds each of the two baseline runs of the whole suite may take (`--baseline-timeout`);
    the second runs under the coverage plugin, slower. Guard parity's runs get it too."""
    max_broken_frac: float = 0.5
    """A mutant breaking more than this share of the tests is not a local bug."""
    pass_to_pass: int = 10
    """Still-passing tests sampled into each check."""
    max_fail_to_pass: int = 25
    """At most this many broken tests in a check."""
    max_turns: int = 8
    """The suite's default turn limit."""
    max_edits: int | None = 1
    """The suite's default edit limit."""
    validate: bool = True
    """Validate every task and drop the invalid ones."""
    repeats: int = 2
    """Validation runs of the check per state (the buggy one, the fixed one): a task whose check
    does not give the same verdict on all of them is dropped, counted as `flaky` in the report."""
    ops: list[str] | None = None
    """Mutation operators (families) to use (None: all)."""
    files: list[str] | None = None
    """Only functions of files matching these globs (relative paths; a folder ending in `/`)."""
    functions: list[str] | None = None
    """Only functions whose name or Class.name matches one of these (globs allowed)."""
    exclude_private: bool = False
    """Leave out functions and methods whose name (or class) starts with `_`."""
    max_per_function: int | None = 2
    """At most this many tasks per function (None: no cap)."""
    select: bool = True
    """Run each candidate's covering tests only (False: the whole suite per candidate)."""
    fork: bool = True
    """Run tests in forks of a ready interpreter where the sandbox can (local backend); the
    baseline turns forking off for the run when forked interpreters write no report
    (`Baseline.fork`)."""
    environment: str = "auto"
    """The repository's environment (the task format's `environment:`): `auto` detects it from
    its packaging files (a suite.yaml that sets one wins), `none` runs without one."""
    progress: bool = True
    """Show progress on stderr (the log file gets it either way)."""
    progress_every: float = 30.0
    """Seconds between two plain progress lines when stderr is not a terminal."""

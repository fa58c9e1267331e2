"""Where the generator's test runs happen: one `TestJob` (the repository's tests, on the clean
repository or with one file replaced by a mutant, the whole suite or a selection) run by
`run_job` in a sandbox of a pool, and a `Runner` that runs many jobs at once.

    with LocalRunner(8, backend="local") as runner:
        result = runner.submit(run_job, work, TestJob(cmd, timeout=60), seconds=180).result()

`LocalRunner` runs jobs on threads over one SandboxPool of this machine; the command line
passes another Runner for a Ray cluster (harness.agent.ray.map.RayRunner), which runs the same
`run_job` on the cluster's workers, each in its node's copy of the workspace.

On the local backend a job runs pytest in a fork of an interpreter that has already imported
pytest (sandbox.forking, the rollouts' check sandboxes): a run of a few tests then costs what
collecting and running them costs, not starting Python and importing pytest. Commands a fork
cannot reproduce (interpreter flags, PYTHON* variables but PYTHONPATH), the Docker backend and
hosts without bubblewrap start a fresh interpreter with `exec`. Forks and fresh interpreters
alike run with the sandbox's pinned hash seed (`sandbox.base.HASH_SEED`), as the check does.
"""
from __future__ import annotations

import compileall
import json
import logging
import py_compile
import shlex
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from fixrl.sandbox import SandboxError, SandboxPool, shipping
from fixrl.sandbox.base import HASH_SEED, WORKDIR
from fixrl.sandbox.forking import ZygoteDied
from fixrl.tasks.format.pytest_command import PytestCommand, parse_pytest_command
from fixrl.tasks.generate.coverage import COVER_PLUGIN

log = logging.getLogger(__name__)

GEN_DIR = ".fixrl_gen"
"""The folder beside the repository copy that holds the generator's plugins and reports."""
PLUGIN = "_fixrl_gen_plugin"
"""The outcomes plugin's module name (`plugin_source()` is its file, beside the repository copy)."""
REPORT = f"{GEN_DIR}/report.json"
RUNNING = f"{REPORT}.running"
"""The outcomes plugin's note of the test now running (read when a run is stopped by its time limit)."""
COVER_REPORT = f"{GEN_DIR}/cover.json"
SELECT_FILE = f"{GEN_DIR}/select.json"
GEN_PRELUDE = (f"from {shipping.PACKAGE}.generate.session import before_fork as _before_fork, "
               "gen_main as _gen_main\n")
"""What the forking sandbox's interpreter runs once (`sandbox/inside/generate/session.py`), then
`_gen_main` in a fork per job, in the workspace."""
DROP_ARGS = {"-x", "--exitfirst", "--lf", "--last-failed", "--ff", "--failed-first", "--sw", "--stepwise"}
"""Arguments that would stop a run early or reorder it: the generator needs every test's outcome."""


@dataclass(frozen=True)
class TestJob:
    """One run of the repository's tests."""

    __test__ = False  # not a pytest test class

    test_cmd: str
    """The user's pytest command (already checked to be one)."""
    timeout: float
    """Seconds the run may take."""
    file: str | None = None
    """The file a mutant replaces (None: the clean repository)."""
    source: str | None = None
    """That file's mutated text."""
    select: tuple[str, ...] | None = None
    """Run only these test ids (None: the whole suite)."""
    cover: bool = False
    """Record which tests run which code (tasks.generate.coverage)."""
    fork: bool = True
    """Run in a forked interpreter where the sandbox can."""
    plain_asserts: bool = False
    """`--assert=plain -p no:cacheprovider --tb=line`: no assertion rewriting of the test modules
    (half of a short run's time on toolz), so no introspected failure messages, no cache, and
    failures without their tracebacks' source (pytest parses every file of a traceback again
    for each failure: a third of a failing run's time on toolz); for runs whose outcomes alone
    count."""


@dataclass
class JobResult:
    """What a job's run left: the generator plugin's report and the coverage record."""

    report: dict | None
    """The plugin's JSON (tests, collect_errors, exitstatus); None when pytest wrote none."""
    cover: dict | None
    """tasks.generate.coverage's record (cover jobs only; None when it was not written)."""
    exit_code: int
    seconds: float
    timed_out: bool
    forked: bool
    output: str = ""
    """The run's last lines (for messages about runs that wrote no report)."""
    running: str | None = None
    """Of a run stopped by its time limit: the test it was running (what hung), when known."""


class Runner(Protocol):
    """Runs `fn(workspace, pool, *args)` calls at once, each with a sandbox pool whose sandboxes
    can hold a copy of `workspace` (on this machine, or on a cluster node's copy of it)."""

    width: int
    """Calls that run at once."""

    def submit(self, fn: Callable[..., Any], workspace: Path, *args: Any, seconds: float) -> Future:
        """Start one call; `seconds`: how long it may take (a cluster counts a worker that takes
        longer as hung). The future holds its result or its exception."""
        ...

    def close(self) -> None: ...


class LocalRunner:
    """Runner on this machine: `width` threads over one SandboxPool."""

    def __init__(self, width: int, backend: str = "local", image: str | None = None) -> None:
        self.width = width
        self.pool = SandboxPool(width, backend=backend, image=image)
        self._ex = ThreadPoolExecutor(width, thread_name_prefix="fixrl-gen")

    def submit(self, fn: Callable[..., Any], workspace: Path, *args: Any, seconds: float) -> Future:
        return self._ex.submit(fn, workspace, self.pool, *args)

    def close(self) -> None:
        self._ex.shutdown(wait=True, cancel_futures=True)
        self.pool.close()

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def plugin_source() -> str:
    """The text of the generator's outcomes plugin file: `sandbox/inside/generate/outcomes.py`
    followed by `failure_capture.py` and `env_plugins.py` (one module, as pytest loads it with
    `-p`), which registers the environment's pytest plugins and no other."""
    return (shipping.source("generate/outcomes.py") + shipping.source("generate/failure_capture.py")
            + shipping.source("env_plugins.py")
            # The environment's plugins, loaded explicitly (autoloading is off: `_variables`), as
            # the check loads them (`sandbox/inside/env_plugins.py`).
            + "\n\npytest_plugins = environment_plugins()\n")


# ---------------------------------------------------------------- one job

def run_job(workspace: Path, pool: SandboxPool, job: TestJob) -> JobResult:
    """Run `job` in a sandbox of `pool` holding a copy of `workspace` (a prepared repository
    copy: the generator's plugins in GEN_DIR). A sandbox that fails is replaced and the job run
    once more; the second failure raises SandboxError (an infrastructure failure, not an outcome)."""
    for attempt in range(2):
        try:
            with _lease(pool, workspace, job.fork) as sb:
                if job.file is not None and job.source is not None:
                    sb.write_file(job.file, job.source)
                if job.select is not None:
                    sb.write_file(SELECT_FILE, json.dumps(sorted(job.select)))
                return _run(sb, job)
        except ZygoteDied as e:
            # Only the code under test runs beside that interpreter: the mutant stopped it.
            log.info("a run's interpreter was killed by the code under test: %s", e)
            return JobResult(None, None, -1, 0.0, False, True)
        except SandboxError as e:
            if attempt == 1:
                raise
            log.warning("a sandbox failed; running the job once more: %s", e)
    raise AssertionError("unreachable")


def _lease(pool: SandboxPool, workspace: Path, fork: bool):
    # The local backend's check sandboxes are forking ones; Docker's `check_sandbox` would start a
    # new container per job, so its pooled sandboxes are used instead.
    if fork and pool.backend == "local":
        return pool.check_sandbox(workspace)
    return pool.acquire(workspace)


def _run(sb: Any, job: TestJob) -> JobResult:
    parsed = parse_pytest_command(job.test_cmd)
    if parsed is None:
        raise ValueError(f"not a pytest command: {job.test_cmd!r}")
    plain = ["--assert=plain", "-p", "no:cacheprovider", "--tb=line"] if job.plain_asserts else []
    fork_env = _fork_env(parsed) if job.fork and getattr(sb, "forking", False) else None
    if fork_env is not None:  # forking needs bubblewrap, which shows the workspace at WORKDIR
        pythonpath = [f"{WORKDIR}/{GEN_DIR}"] + [p for p in fork_env.pop("PYTHONPATH", "").split(":") if p]
        # The plugins are handed to pytest as modules: each `-p NAME` costs a scan of every
        # installed distribution's entry points.
        kwargs = {"args": pytest_args(parsed, plugins=False) + plain, "pythonpath": pythonpath,
                  "plugins": [PLUGIN, COVER_PLUGIN]}
        res = sb.fork_python(GEN_PRELUDE, "_gen_main", kwargs, env={**fork_env, **_variables(job, WORKDIR)},
                             timeout=job.timeout)
        forked = True
    else:
        res = sb.exec(exec_command(parsed, pytest_args(parsed) + plain, _variables(job, "$PWD")),
                      timeout=job.timeout)
        forked = False
    report = _read_json(sb, REPORT)
    cover = _read_json(sb, COVER_REPORT) if job.cover else None
    running = _read_text(sb, RUNNING) if res.timed_out and report is None else None
    return JobResult(report, cover, res.exit_code, res.seconds, res.timed_out, forked,
                     output=res.output[-2000:] if report is None else "", running=running)


def _variables(job: TestJob, root: str) -> dict[str, str]:
    """What the plugins read: where to write their reports, which tests to run."""
    # Plugins found on sys.path are not loaded, as in the check (`sandbox/inside/env_plugins.py`):
    # the outcomes plugin loads the environment's own.
    env = {"FIXRL_GEN_REPORT": f"{root}/{REPORT}", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    if job.select is not None:
        env["FIXRL_GEN_SELECT"] = f"{root}/{SELECT_FILE}"
    if job.cover:
        env["FIXRL_GEN_COVER"] = f"{root}/{COVER_REPORT}"
    return env


def _read_text(sb: Any, path: str) -> str | None:
    """A small file the plugins wrote, stripped; None when missing, unreadable or empty."""
    try:
        text = sb.read_file(path)
    except (FileNotFoundError, IsADirectoryError, PermissionError, UnicodeDecodeError, OSError):
        return None
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    return text.strip() or None


def _read_json(sb: Any, path: str) -> dict | None:
    """A JSON object the plugins wrote; None when missing, unreadable or not an object."""
    text = _read_text(sb, path)
    try:
        data = json.loads(text) if text is not None else None
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def pytest_args(parsed: PytestCommand, plugins: bool = True) -> list[str]:
    """The user's pytest arguments (without those that stop early or reorder) plus the
    generator's plugins (`plugins`: as `-p` arguments) and the report detail they read."""
    args = [a for a in parsed.args if a not in DROP_ARGS and not a.startswith("--maxfail")]
    return args + (["-p", PLUGIN, "-p", COVER_PLUGIN] if plugins else []) + ["-vvv", "--tb=long"]


def compile_workspace(work: Path) -> bool:
    """Byte-compile every .py file of the repository copy `work` where an import looks for it
    (`__pycache__`), checked by the hash of its source (PEP 552) rather than its time stamp,
    which a sandbox's copy does not keep; tracebacks name the files where runs see them. A run
    still imports the repository's modules afresh, but no longer compiles the unchanged ones: a
    file a mutant replaced no longer matches its hash and is compiled from its new text. A file
    that does not compile is left out, as an import would find it. False when one did not."""
    return bool(compileall.compile_dir(str(work), ddir=WORKDIR, force=True, quiet=2,
                                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH))


def exec_command(parsed: PytestCommand, args: list[str], env: dict[str, str]) -> str:
    """The shell command of a fresh-interpreter run: the user's environment and interpreter,
    our variables, and GEN_DIR on PYTHONPATH (the plugins' home)."""
    exports = " ".join(f'{k}="{v}"' for k, v in env.items())  # our own paths, $PWD expanded
    head = parsed.env + [parsed.python] + parsed.python_flags + ["-m", "pytest"]
    return (f'export {exports} PYTHONPATH="$PWD/{GEN_DIR}${{PYTHONPATH:+:$PYTHONPATH}}"; '
            f'rm -f {REPORT} {COVER_REPORT}; ' + " ".join(shlex.quote(t) for t in head + args))


_FORK_PYTHONS = ("python", "python3")
_FORK_SAFE_ENV = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")


def _fork_env(parsed: PytestCommand) -> dict[str, str] | None:
    """The command's own variables for a forked run, or None when only a new interpreter can
    run it as written (interpreter flags, another interpreter, PYTHON* variables)."""
    if parsed.python not in _FORK_PYTHONS or parsed.python_flags:
        return None
    env = dict(e.split("=", 1) for e in parsed.env)
    # The zygote already runs with the sandbox's pinned hash seed: a command pinning the same one forks.
    if any(k.startswith("PYTHON") and k not in _FORK_SAFE_ENV and (k, v) != ("PYTHONHASHSEED", HASH_SEED)
           for k, v in env.items()):
        return None
    return env

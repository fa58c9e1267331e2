"""The hidden check: the reward's heart, written to resist reward hacking.

`run_check(task, sb, answer, guard=...)` copies the hidden check files into the sandbox (which
already holds the repository state to judge) and runs the check command.

Pytest checks do not trust the process they run in. The command is rewritten to run pytest
under the check runner (`sandbox/inside/check`, shipped into the sandbox as files): a
supervisor that never imports repository code forks the judged pytest process, which installs
a PEP 578 audit hook (the runtime guard) before any repository code is imported and reports
each test's phases as they happen over a FIFO; the supervisor writes the report and prints its
digest as the last frame of its output, a frame no other process can write (the runner
package's docstring says how, and what the guard treats as tampering). The host reads the report, checks it against that
digest, and cross-checks it with pytest's JUnit XML (which can only take passes away) and the
exit status: a test passes only when both agree and the session ended with status 0. Skipped,
xfailed, xpassed, errored, deselected and never-run tests are not passes; a missing frame,
a report that does not match it, or a report that is not a regular file is a fail; zero tests
is a fail; a timeout is a fail; a run the guard stopped is a fail that names the event.

The verdict rests on no secret: there is no key in the judged process, or anywhere. What the
guard does not guarantee is in the runner package's docstring; the defences upstream of it are the
static change policy and `tasks.is_test_path` (the agent's test files, conftest.py, pytest
configuration and shadowing modules never reach the check, which runs on a fresh copy in a
sandbox no agent has used).

`guard` (a `tasks.check.guard.GuardSpec`) names the files the agent changed and what each may do at
run time; without it the guard still protects the runner's files, the hidden test files and
pytest, but attributes nothing to changed code.

In a one-shot run the runner's files are written into the check's private directory and its
launcher runs them (the supervisor deletes them before any repository code runs). In a forking
sandbox (`PythonForker`: the rollouts' local check sandboxes) the runner's modules are imported
once, from the sandbox's read-only copy of the inside package, in a long-lived interpreter that
never sees repository code, and each check is a fork of it that calls `supervise`: same
supervisor, guard and verdict, without starting Python and importing pytest each time
(sandbox.forking says what that interpreter guarantees). Commands a fork cannot reproduce
(interpreter flags, PYTHON* variables but PYTHONPATH) start a fresh interpreter as before.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from fixrl.sandbox import shipping
from fixrl.sandbox.base import HASH_SEED, SandboxError
from fixrl.sandbox.forking import ZygoteDied
from fixrl.sandbox.inside.check.base import FRAME_TAG, JUNIT_NAME, LAUNCHER_PREFIX, REPORT_NAME
from fixrl.tasks.format.loader import field_text
from fixrl.tasks.format.pytest_command import PytestCommand, addopts_override, parse_pytest_command

if TYPE_CHECKING:
    from fixrl.sandbox.base import ExecResult, Sandbox
    from fixrl.tasks.check.guard import GuardSpec
    from fixrl.tasks.format.schema import Task

GUARD_STOPPED = "the check's guard stopped the run: "
"""How a CheckResult's reason starts when the runtime guard stopped the run."""
ANSWER_FILE = "/tmp/fixrl_answer.txt"
ANSWER_ENV = "FIXRL_ANSWER"
MAX_ANSWER_CHARS = 100_000

PRELUDE = f"from {shipping.PACKAGE}.check.supervisor import before_fork as _before_fork, supervise\n"
"""What a forking check sandbox's interpreter runs once (`supervise` is called in a fork per
check; `_before_fork` is the pytest warm-up)."""
RUNNER_FILES = {rel: shipping.source(rel) for rel in [*shipping.package_files("check"), "warmup.py", "env_plugins.py"]}
"""The runner's files (paths in the inside package -> text): what a one-shot check ships."""
_LAUNCHER = "check/launch.py"
_FRAME_RE = re.compile("\x00" + re.escape(FRAME_TAG) + r" ([0-9a-f]{64}) (\d+)\x00\n?")

Outcome = Literal["pass", "fail", "error"]


@dataclass
class CheckResult:
    outcome: Outcome
    """pass: exit 0 and every named test passed; fail: anything else the code did; error: the
    sandbox itself failed (never a verdict on the code: callers retry or leave it out)."""
    tests: dict[str, str] = field(default_factory=dict)
    """Test node id -> passed | failed | error | skipped | xfailed | xpassed | missing | tampered,
    for every test the check names plus every other test it saw run (partial credit)."""
    exit_code: int | None = None
    output: str = ""
    """The check command's output (capped by the sandbox)."""
    seconds: float = 0.0
    reason: str = ""
    """Why it did not pass, in one line ('' for a pass)."""
    timed_out: bool = False
    stopped_in: str | None = None
    """The test the guard stopped the run in, when it did and one was running."""

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    def fraction_passed(self, names: list[str] | None = None) -> float:
        """Share of `names` (default: every test seen) that passed: a partial-credit reward."""
        names = list(self.tests) if names is None else names
        if not names:
            return 1.0 if self.passed else 0.0
        return sum(self.tests.get(n) == "passed" for n in names) / len(names)


# ---------------------------------------------------------------- JUnit XML

def junit_key(nodeid: str) -> tuple[str, str]:
    """(classname, name) as pytest's junitxml writes them for a node id (mangle_test_address)."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def parse_junit(text: str) -> dict[tuple[str, str], str]:
    """(classname, name) -> passed | failed | error | skipped. Raises ValueError if unparseable."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ValueError(f"unparseable JUnit XML: {e}") from None
    out: dict[tuple[str, str], str] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        tags = {child.tag for child in case}
        if "error" in tags:
            outcome = "error"
        elif "failure" in tags:
            outcome = "failed"
        elif "skipped" in tags:
            outcome = "skipped"
        else:
            outcome = "passed"
        if out.get(key, "passed") != "passed":
            continue  # a second entry for the same test never upgrades a non-pass
        out[key] = outcome
    return out


# ---------------------------------------------------------------- the runner

def _tail(text: str, n: int = 400) -> str:
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def _answer_text(answer: str | None) -> str:
    return (answer or "").replace("\x00", "")[:MAX_ANSWER_CHARS]


def clear_check_paths(task: Task, root: Path) -> None:
    """On a host directory about to be judged: remove whatever sits at the hidden check files'
    paths, and a symlink or file where one of their parent directories should be (what
    `run_check` otherwise does inside the sandbox, one command more per check). Never follows
    a link."""

    rels = [PurePosixPath(d) for d in task.check.files]
    if any(r.is_absolute() or ".." in r.parts for r in rels):  # the schema refuses these
        raise ValueError(f"check file paths must be inside the repository: {sorted(map(str, rels))}")
    parents = sorted({PurePosixPath(*r.parts[:i]) for r in rels for i in range(1, len(r.parts))},
                     key=lambda p: len(p.parts))
    for rel in parents:  # shallow first: a link high up goes before anything under it is looked at
        target = Path(root, *rel.parts)
        if target.is_symlink() or (os.path.lexists(target) and not target.is_dir()):
            target.unlink()
    for rel in rels:
        target = Path(root, *rel.parts)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif os.path.lexists(target):
            target.unlink()


def _write_check_files(task: Task, sb: Sandbox, paths_cleared: bool = False) -> None:
    if not task.check.files:
        return

    if not paths_cleared:
        # Whatever sits at those paths (a file the agent made, a symlink, a directory) goes first,
        # and so does a symlink or a file standing where one of their parent directories should be.
        parents = sorted({str(PurePosixPath(*PurePosixPath(d).parts[:i]))
                          for d in task.check.files for i in range(1, len(PurePosixPath(d).parts))},
                         key=lambda p: p.count("/"))
        script = [f"if [ -L {shlex.quote(p)} ] || {{ [ -e {shlex.quote(p)} ] && [ ! -d {shlex.quote(p)} ]; }}; "
                  f"then rm -rf -- {shlex.quote(p)}; fi" for p in parents]
        script.append("rm -rf -- " + " ".join(shlex.quote(p) for p in task.check.files))
        sb.exec("; ".join(script), timeout=30)
    for dest, content in task.check.files.items():
        sb.write_file(dest, field_text(task, content))


def run_check(task: Task, sb: Sandbox, answer: str | None = None, *,
              paths_cleared: bool = False, guard: GuardSpec | None = None, guarded: bool = True) -> CheckResult:
    """Judge the repository state in `sb`'s WORKDIR with the task's hidden check.

    The caller has already put the state to judge (and run `tasks.run_setup`) in `sb`; the
    hidden check files are written here, just before the command runs. A SandboxError becomes
    outcome "error" (retry on a fresh sandbox); everything the code does is pass or fail.
    paths_cleared: the caller loaded `sb` from a directory it passed to `clear_check_paths`
    (and ran no setup since), so nothing needs removing first. guard: the agent's changed
    files and their allowances (tasks.check.guard), for the runtime guard of pytest checks.
    guarded=False leaves the runtime guard out (`fixrl bench check`'s baseline; never a verdict
    to train on).
    """

    start = time.monotonic()
    try:
        result = _run_check(task, sb, answer, paths_cleared, guard, guarded)
    except SandboxError as e:
        result = CheckResult("error", output=str(e), reason=f"sandbox error: {e}")
    result.seconds = time.monotonic() - start
    return result


def _run_check(task: Task, sb: Sandbox, answer: str | None, paths_cleared: bool,
               guard: GuardSpec | None, guarded: bool = True) -> CheckResult:
    check = task.check
    env_prefix = ""
    if answer is not None or task.kind == "question":
        text = _answer_text(answer)
        sb.write_file(ANSWER_FILE, text)
        env_prefix = f"export {ANSWER_ENV}={shlex.quote(text)}; "  # reaches every command of a compound one
    try:
        _write_check_files(task, sb, paths_cleared)
    except (OSError, ValueError) as e:  # e.g. a path the workspace made unwritable
        return CheckResult("fail", tests={t: "missing" for t in check.tests},
                           reason=f"could not write the check files: {e}")

    parsed = parse_pytest_command(check.command)
    if parsed is None:
        res = sb.exec(env_prefix + check.command, timeout=check.timeout)
        if res.timed_out:
            return CheckResult("fail", exit_code=res.exit_code, output=res.output, timed_out=True,
                               reason=f"check timed out after {check.timeout:g}s")
        if res.exit_code != 0:
            return CheckResult("fail", exit_code=res.exit_code, output=res.output,
                               reason=f"check command exited with status {res.exit_code}: {_tail(res.output, 200)}")
        return CheckResult("pass", exit_code=0, output=res.output)

    # The runner's private directory: /tmp is the sandbox's own (cleared on reset).
    workdir = f"/tmp/.fixrl-check-{secrets.token_hex(8)}"
    config = {"args": _pytest_args(parsed, f"{workdir}/{JUNIT_NAME}"), "workdir": workdir,
              "changed": guard.to_wire() if guard is not None else {}, "hidden": sorted(check.files),
              "own": guard.own_wire() if guard is not None else {},
              "originals": guard.originals_wire() if guard is not None else {},
              "guard": guarded, "addopts": addopts_override(parsed.args), "select": not check.tests}
    if isinstance(sb, PythonForker) and sb.forking:
        fork_env = _fork_env(parsed, answer)
        if fork_env is not None:
            return _run_forked(task, sb, config, fork_env)

    shipped = f"{workdir}/{LAUNCHER_PREFIX}{secrets.token_hex(4)}"  # the supervisor deletes it first thing
    for rel, text in RUNNER_FILES.items():
        sb.write_file(shipping.in_sandbox(rel, shipped), text)
    launcher = shipping.in_sandbox(_LAUNCHER, shipped)
    cmd = " ".join([*(shlex.quote(e) for e in parsed.env), shlex.quote(parsed.python),
                    *(shlex.quote(f) for f in parsed.python_flags), shlex.quote(launcher),
                    shlex.quote(json.dumps(config))])
    try:
        res = sb.exec(env_prefix + cmd, timeout=check.timeout)
        return _verdict(task, sb, res, workdir)
    finally:
        try:
            sb.exec(f"rm -rf {workdir}", timeout=30)
        except Exception:  # noqa: BLE001 - cleanup of a dying sandbox must not mask the verdict
            pass


@runtime_checkable
class PythonForker(Protocol):
    """A sandbox that can run a function in a fork of an interpreter that has already run a
    prelude (sandbox.forking.ForkingSandbox): a check then skips starting Python and
    importing pytest."""

    forking: bool

    def fork_python(self, prelude: str, entry: str, kwargs: dict, *, env: dict[str, str] | None = None,
                    timeout: float = 60.0) -> ExecResult: ...


_FORK_PYTHONS = ("python", "python3")
_FORK_SAFE_ENV = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")


def _fork_env(parsed: PytestCommand, answer: str | None) -> dict[str, str] | None:
    """The environment a forked run of `parsed` gets, or None when a fork cannot run it as
    a new interpreter would: interpreter flags, another interpreter, PYTHON* variables that
    only a starting interpreter reads."""
    if parsed.python not in _FORK_PYTHONS or parsed.python_flags:
        return None
    env = dict(e.split("=", 1) for e in parsed.env)
    # The zygote already runs with the sandbox's pinned hash seed: a command pinning the same one forks.
    if any(k.startswith("PYTHON") and k not in _FORK_SAFE_ENV and (k, v) != ("PYTHONHASHSEED", HASH_SEED)
           for k, v in env.items()):
        return None
    if answer is not None:
        env[ANSWER_ENV] = _answer_text(answer)
    return env


def _run_forked(task: Task, sb: PythonForker, config: dict, env: dict[str, str]) -> CheckResult:
    check = task.check
    config = {**config, "pythonpath": [p for p in env.get("PYTHONPATH", "").split(":") if p]}
    try:
        res = sb.fork_python(PRELUDE, "supervise", config, env=env, timeout=check.timeout)
    except ZygoteDied as e:
        # Only the code under test runs beside the interpreter: it killed or stopped it.
        return CheckResult("fail", tests={t: "missing" for t in check.tests},
                           reason=f"the check's interpreter was killed or stopped during the run: {e}")
    return _verdict(task, sb, res, config["workdir"])  # type: ignore[arg-type]


def _pytest_args(parsed: PytestCommand, junit_path: str) -> list[str]:
    """The check's own pytest arguments plus ours: no cache, no configured addopts (the runner
    puts back the part that chooses tests: `sandbox/inside/check/addopts.py`), the repository
    as rootdir, test modules compiled through pytest's import hook (where the guard compiles
    them), a JUnit report to cross-check the runner's."""
    return list(parsed.args) + ["-p", "no:cacheprovider", "-o", "addopts=", "--rootdir=.", "--assert=rewrite",
                                f"--junitxml={junit_path}"]


def _read(sb: Sandbox, path: str) -> str | None:
    """A runner file's text, or None when it is missing or is not a regular file (a FIFO, a
    socket, a device, a link: the code under test's doing, so a fail, never a hang)."""
    try:
        return sb.read_file(path)
    except (OSError, ValueError):
        return None


def report_frame(output: str) -> tuple[str, tuple[str, int] | None]:
    """(the output without the supervisor's frame, (sha256, size) of the report it vouches
    for, or None when there is no frame). Only the supervisor can write a NUL byte to that
    stream, so any frame is its; the last one counts."""
    frames = list(_FRAME_RE.finditer(output))
    if not frames:
        return output, None
    last = frames[-1]
    return _FRAME_RE.sub("", output), (last.group(1), int(last.group(2)))


def read_report(sb: Sandbox, workdir: str, frame: tuple[str, int]) -> dict:
    """The supervisor's report, checked against its frame; ValueError when it is missing, not
    a regular file, or not what the frame vouches for."""
    raw = _read(sb, f"{workdir}/{REPORT_NAME}")
    if raw is None:
        raise ValueError("the report is missing or is not a regular file")
    body = raw.encode("utf-8")
    if len(body) != frame[1] or hashlib.sha256(body).hexdigest() != frame[0]:
        raise ValueError("the report does not match the digest its supervisor printed")
    report = json.loads(raw)
    if not isinstance(report, dict) or not isinstance(report.get("tests"), dict):
        raise ValueError("the report has no tests")
    return report


def _verdict(task: Task, sb: Sandbox, res: ExecResult, workdir: str) -> CheckResult:
    named = list(task.check.tests)
    output, frame = report_frame(res.output)
    if res.timed_out:
        return CheckResult("fail", tests={t: "missing" for t in named}, exit_code=res.exit_code,
                           output=output, timed_out=True, reason=f"check timed out after {task.check.timeout:g}s")

    def fail(reason: str, tests: dict[str, str] | None = None) -> CheckResult:
        return CheckResult("fail", tests=tests if tests is not None else {t: "missing" for t in named},
                           exit_code=res.exit_code, output=output, reason=reason)

    if frame is None:
        return fail(f"no test report: the check's runner did not finish (exit status {res.exit_code}): "
                    f"{_tail(output, 200)}")
    try:
        report = read_report(sb, workdir, frame)
    except ValueError as e:
        return fail(f"invalid test report: {e}")
    junit_raw = _read(sb, f"{workdir}/{JUNIT_NAME}")
    tests = _cross_checked(report, junit_raw)
    for t in named:
        tests.setdefault(t, "missing")
    if report.get("tamper"):
        stopped = fail(GUARD_STOPPED + "; ".join(map(str, report["tamper"][:3])), tests)
        running = report.get("stopped_in")
        return replace(stopped, stopped_in=running if isinstance(running, str) else None)
    if not report.get("finished") or not junit_raw:
        if report.get("finished"):
            return fail("no JUnit report: pytest did not finish normally", tests)
        return fail(f"no test report: pytest did not finish normally (exit status {report.get('exit_code')}): "
                    f"{_tail(output, 200)}", tests)
    required = named or list(tests)
    if not required:
        return fail("no tests ran (zero collected)", tests)
    if not named and report.get("unlisted", 0) != report.get("unlisted_passed", 0):
        return fail(f"{report['unlisted'] - report['unlisted_passed']} tests beyond the report's list did not pass",
                    tests)
    not_passed = [t for t in required if tests.get(t) != "passed"]
    if not_passed:
        shown = ", ".join(f"{t} {tests.get(t, 'missing')}" for t in not_passed[:3])
        more = f" (+{len(not_passed) - 3} more)" if len(not_passed) > 3 else ""
        return fail(f"{len(not_passed)}/{len(required)} check tests did not pass: {shown}{more}", tests)
    if res.exit_code != 0 or report.get("exitstatus") != 0:
        return fail(f"pytest exited with status {res.exit_code} (session status {report.get('exitstatus')})", tests)
    return CheckResult("pass", tests=tests, exit_code=0, output=output)


def _cross_checked(report: dict, junit_raw: str | None) -> dict[str, str]:
    """The report's outcomes, where JUnit can only take a pass away (a test JUnit does not
    show passed is not passed; JUnit missing or unparseable takes every pass away)."""
    try:
        junit = parse_junit(junit_raw) if junit_raw is not None else {}
    except ValueError:
        junit = {}
    tests: dict[str, str] = {}
    for nodeid, outcome in report["tests"].items():
        jo = junit.get(junit_key(str(nodeid)), "missing")
        if outcome == "passed" and jo != "passed":
            outcome = "failed" if jo == "missing" else jo
        tests[str(nodeid)] = str(outcome)
    return tests

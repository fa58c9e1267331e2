"""Is a task sound? Its check must fail on the bug and pass with the reference fix, every time.

`validate_task(task, pool, repeats)` runs, in sandboxes from `pool`:
- the bug applies (and the fix applies on top of it);
- the public test command runs on the buggy state (not a timeout, not "no tests collected",
  not a usage error or a missing command);
- fix tasks: the reference fix passes the task's edit rules (tasks.check.rules, judged on the
  host before anything runs; rules the task or suite relaxes are not applied);
- fix tasks: the check FAILS on the buggy state and PASSES on the fixed state;
  question tasks: the check PASSES with the reference answer and FAILS with a wrong (empty) one;
- each state is judged `repeats` times: the same verdict every time, else the task is flagged
  flaky. A check that times out makes the task invalid.

The public tests run in a sandbox of the agent's kind (`pool.acquire`); every state is judged by
the reward itself (`tasks.check.reward.score`: the buggy state as an empty submission, the
reference fix as the submission of its changes) in the pool's check sandboxes
(`pool.check_sandbox`: reused forking sandboxes on the local backend, a new container on
Docker), exactly as rollouts judge an episode, so that a valid task is one whose reference fix
passes in training.
"""
from __future__ import annotations

import functools
import re
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from fixrl.sandbox.base import SandboxConfigError, SandboxError
from fixrl.sandbox.factory import image_unsupported, require_images
from fixrl.sandbox.pool import SandboxPool
from fixrl.tasks.check.images import image_problem
from fixrl.tasks.check.reward import GUARD_STOPPED, Score, Submission, run_public_tests, score
from fixrl.tasks.check.rules import judge_changes, relax_hint, repo_modules, tree_changes
from fixrl.tasks.check.validate_cache import ValidationCache
from fixrl.tasks.format.loader import TaskError, build_environments, field_text, load_suite_lenient
from fixrl.tasks.format.materialize import changed_paths, excerpt, is_test_path, materialize, run_setup
from fixrl.tasks.format.pytest_command import parse_pytest_command
from fixrl.tasks.format.schema import Suite, Task

if TYPE_CHECKING:
    from fixrl.sandbox.pool import SandboxPool

_PYTEST_EXIT = {2: "interrupted (collection errors?)", 3: "internal error", 4: "usage error",
                5: "no tests collected"}
_ERROR_LINE = re.compile(r"^(?:E\s+|INTERNALERROR>\s*)?"
                         r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|NotFound|Exit)(?::\s.*|:?$))")
_COLLECTION_LINE = re.compile(r"(ERROR collecting .*|ImportError while .*|error: .*|No module named .*)")


def first_error_line(output: str) -> str | None:
    """The first line of `output` that names an exception (`E   ModuleNotFoundError: No module
    named 'attr'`, `importlib.metadata.PackageNotFoundError: pluggy`), else the first that says
    a collection or import failed; None if there is none."""
    lines = output.splitlines()
    for line in lines:
        m = _ERROR_LINE.match(line.strip())
        if m and not m.group(1).startswith(("AssertionError", "assert")):
            return m.group(1).strip()[:300]
    for line in lines:
        m = _COLLECTION_LINE.search(line)
        if m:
            return m.group(1).strip()[:300]
    return None


@dataclass
class ValidationResult:
    task_id: str
    ok: bool
    reasons: list[str] = field(default_factory=list)
    """Why the task is invalid (empty when ok)."""
    flaky: bool = False
    """Some state got different verdicts on repeated runs."""
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    """Problems that do not make the task invalid (e.g. a check file the agent can read)."""
    verdicts: dict[str, list[str]] = field(default_factory=dict)
    """State label -> the check's outcome on each run."""
    file: str | None = None
    cached: bool = False
    """Read back from the suite's validation cache (`tasks.check.validate_cache`), not run again."""
    first_error: str | None = None
    """The first line of the real error behind an invalid verdict (an ImportError, a collection
    error) as the test output shows it; None when it shows none."""

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class _Run:
    label: str
    workspace: Path
    """The state's tree (for the public tests)."""
    submission: Submission
    """The state as the reward sees it: the changes from the buggy state, the answer."""
    expect: str


@dataclass(frozen=True)
class _Ran:
    """What `_public_tests` reads of a run."""

    output: str
    exit_code: int
    timed_out: bool


def _public_tests(task: Task, sb) -> str | None:
    """Why the public test command does not run properly, or None. A pytest command runs as the
    agent's `test` tool runs it (`run_public_tests`: the check's runner, so the environment's
    pytest plugins and no other, `sandbox/inside/env_plugins.py`); another runs as it is."""
    if parse_pytest_command(task.public_tests) is not None:
        got = run_public_tests(task, sb, task.public_tests, task.limits.tool_timeout, {})
        if got.outcome == "error":
            raise SandboxError(got.reason)
        if got.reason.startswith(GUARD_STOPPED):  # the `test` tool would say FAILED, whatever pytest said
            return f"public test command {task.public_tests!r}: {got.reason}"
        res = _Ran(got.output, -1 if got.exit_code is None else got.exit_code, got.timed_out)
    else:
        res = sb.exec(task.public_tests, timeout=task.limits.tool_timeout)
    tail = excerpt(res.output)
    error = first_error_line(res.output)
    if error and error not in tail:
        tail = f"first error: {error} ... {tail}"
    if res.timed_out:
        return f"public test command {task.public_tests!r} timed out after {task.limits.tool_timeout:g}s"
    if parse_pytest_command(task.public_tests) is not None and res.exit_code in _PYTEST_EXIT:
        what = _PYTEST_EXIT[res.exit_code]
        hint = " (does the repository have tests?)" if res.exit_code == 5 else ""
        return f"public test command {task.public_tests!r} exited {res.exit_code}: {what}{hint}: {tail}"
    if res.exit_code in (126, 127):
        return f"public test command {task.public_tests!r} could not run (exit {res.exit_code}): {tail}"
    return None


def _public_problems(task: Task, pool: SandboxPool, tree: Path) -> list[str]:
    """Why the public test command does not run on `tree` in an agent's kind of sandbox
    (setup included). Raises SandboxError."""
    with pool.acquire(tree, image=task.sandbox_image) as sb:
        try:
            run_setup(task, sb)
        except TaskError as e:
            return [str(e)]
        problem = _public_tests(task, sb)
        return [problem] if problem else []


def _judge(task: Task, pool: SandboxPool, run: _Run, repeats: int) -> tuple[list[Score], list[str]]:
    """Judge one state `repeats` times by the reward, in the check sandboxes rollouts use:
    (scores, problems). Raises SandboxError (the retry is `_judge_retrying`'s)."""

    results: list[Score] = []
    open_check = functools.partial(pool.check_sandbox, image=task.sandbox_image)
    for _ in range(repeats):
        got = score(task, run.submission, open_check, retries=0)
        if got.error_kind == "task":
            return results, [got.reason]
        if got.error_kind == "crash":
            raise RuntimeError(got.reason)
        if got.outcome == "error":
            raise SandboxError(got.check.reason if got.check is not None else got.reason)
        results.append(got)
        if got.check is not None and got.check.timed_out:
            break  # K timeouts in a row would only cost K times the time
    return results, []


def _judge_retrying(task: Task, pool: SandboxPool, run: _Run, repeats: int, public: bool,
                    reasons: list[str]) -> list[Score]:
    """`_judge` (after the public tests, for the first state), once more if the sandbox itself failed."""

    last: Exception | None = None
    for _ in range(2):
        try:
            problems = _public_problems(task, pool, run.workspace) if public else []
            results, more = _judge(task, pool, run, repeats)
        except SandboxError as e:
            last = e
            continue
        reasons.extend(problems + more)
        return results
    reasons.append(f"sandbox error on the {run.label} (after a retry): {last}")
    return []


def validate_task(task: Task, pool: SandboxPool, repeats: int = 3) -> ValidationResult:
    """Validate one task in sandboxes from `pool` (see the module docstring for what is checked)."""
    start = time.monotonic()
    out = ValidationResult(task.id, ok=False, file=str(task.source_file) if task.source_file else None)
    repeats = max(1, int(repeats))
    with tempfile.TemporaryDirectory(prefix="fixrl-validate-") as tmp:
        try:
            buggy = materialize(task, Path(tmp) / "buggy", "buggy")
            fixed = materialize(task, Path(tmp) / "fixed", "fixed") if task.kind == "fix" else None
        except TaskError as e:
            out.reasons.append(str(e))
            out.seconds = time.monotonic() - start
            return out
        out.reasons += _location_problems(task, buggy)
        if fixed is not None:
            out.reasons += _rule_problems(task, buggy, fixed)
        out.warnings += _visible_check_files(task, buggy)
        if task.kind == "fix":
            fix = Submission({path: new for path, (_, new) in tree_changes(buggy, fixed).items()})
            runs = [_Run("buggy state", buggy, Submission(), "fail"),
                    _Run("reference fix", fixed, fix, "pass")]
        else:
            runs = [_Run("reference answer", buggy, Submission(answer=task.answer or ""), "pass"),
                    _Run("wrong (empty) answer", buggy, Submission(answer=""), "fail")]
        for n, run in enumerate(runs):
            results = _judge_retrying(task, pool, run, repeats, public=(n == 0), reasons=out.reasons)
            out.verdicts[run.label] = [r.outcome for r in results]
            if not results:
                continue
            if any(r.violations for r in results):
                continue  # a fail without a check: `_rule_problems` has said why
            timed = [r for r in results if r.check is not None and r.check.timed_out]
            if timed:
                out.reasons.append(f"check timed out after {task.check.timeout:g}s on the {run.label}")
                continue
            verdicts = {r.outcome for r in results}
            if len(verdicts) > 1:
                out.flaky = True
                n_pass = sum(r.outcome == "pass" for r in results)
                out.reasons.append(f"flaky: the check passed {n_pass} of {len(results)} runs on the {run.label}")
                continue
            got = results[0]
            if got.outcome != run.expect:
                out.reasons.append(_wrong_verdict(task, run, got))
                error = first_error_line(got.check.output) if got.check is not None else None
                if error and out.first_error is None:
                    out.first_error = error
                    if error not in out.reasons[-1]:
                        out.reasons[-1] += f" (first error: {error})"
    if out.first_error is None and out.reasons:
        out.first_error = next(filter(None, (first_error_line(r) for r in out.reasons)), None)
    out.reasons = _once(out.reasons)
    out.ok = not out.reasons
    out.seconds = time.monotonic() - start
    return out


def _once(reasons: list[str]) -> list[str]:
    """`reasons` without those that repeat an earlier one (a setup failure reported by the
    public tests, then by the check on each state, is said once)."""
    kept: list[str] = []
    for reason in reasons:
        if not any(reason == k or (len(k) > 40 and k.split(": ", 1)[-1] in reason) for k in kept):
            kept.append(reason)
    return kept


def _visible_check_files(task: Task, buggy: Path) -> list[str]:
    """Warnings for hidden check files the agent can read in the buggy repository.

    A check file identical to the clean repository's own *test* file at its path is not hidden
    at all: it is one of the repository's tests, which the public test command runs anyway (the
    generator's checks are made of such files), so it is no leak and gets no warning. A leak is
    a check file whose text the agent can read although it is not such a test: one identical to
    a non-test file at its path (an answer checker left in the repository), one the bug itself
    writes into the repository (`bug` / `bug_files`), or one whose text is in the buggy
    repository under another path."""
    written = set(task.bug_files)
    if task.bug is not None:
        written.update(changed_paths(field_text(task, task.bug)))
    copies: _ContentIndex | None = None
    warnings: list[str] = []
    for dest, value in task.check.files.items():
        text = field_text(task, value)
        at = buggy / dest
        if at.is_file() and not at.is_symlink() and at.read_text(errors="replace") == text:
            if dest in written:
                warnings.append(f"check file {dest} is written into the buggy repository by the task's bug: "
                                "the agent can read it")
            elif not is_test_path(dest):
                warnings.append(f"check file {dest} is already in the buggy repository: the agent can read it")
            continue
        if not text.strip():
            continue  # an empty __init__.py reveals nothing, and empty files are everywhere
        copies = copies or _ContentIndex(buggy)
        elsewhere = copies.find(text.encode("utf-8"))
        if elsewhere:
            warnings.append(f"check file {dest} is in the buggy repository as {elsewhere}: the agent can read it")
    return warnings


class _ContentIndex:
    """The buggy tree's regular files by size, to find a check file's text under another path
    without reading every file (only those of the same size are compared)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.by_size: dict[int, list[Path]] = {}
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                self.by_size.setdefault(path.stat().st_size, []).append(path)

    def find(self, data: bytes) -> str | None:
        for path in self.by_size.get(len(data), []):
            if path.read_bytes() == data:
                return path.relative_to(self.root).as_posix()
        return None


def _location_problems(task: Task, buggy: Path) -> list[str]:
    """`file` must exist and define `function`: per-episode renaming depends on them."""
    if task.file is None:
        return ["field 'function': renaming needs `file` too"] if task.function else []
    path = buggy / task.file
    if not path.is_file():
        return [f"field 'file': {task.file} is not in the buggy repository"]
    if task.function:
        name = task.function.rsplit(".", 1)[-1]
        text = path.read_text(encoding="utf-8", errors="replace")
        if not re.search(rf"^\s*(async\s+)?def\s+{re.escape(name)}\s*\(", text, re.MULTILINE):
            return [f"field 'function': no function {name!r} is defined in {task.file}"]
    return []


def _rule_problems(task: Task, buggy: Path, fixed: Path) -> list[str]:
    """The reference fix must pass the task's edit rules (rules the task relaxes aside),
    or a trained agent is refused the very change that fixes the bug."""
    violations = judge_changes(tree_changes(buggy, fixed), task.rules, repo_modules(buggy))
    if not violations:
        return []
    listed = "; ".join(str(v) for v in violations[:5])
    if len(violations) > 5:
        listed += f" (and {len(violations) - 5} more)"
    return [f"the reference fix breaks the edit rules: {listed} {relax_hint(violations)}"]


def _wrong_verdict(task: Task, run: _Run, got: Score) -> str:
    if run.expect == "fail":
        if task.kind == "fix":
            return "check passes on the buggy state: it does not detect the bug"
        return "check passes with a wrong (empty) answer: it does not verify the answer"
    what = "with the reference fix" if task.kind == "fix" else "with the reference answer"
    return f"check fails {what}: {got.reason}"


def validate_suite(suite: Suite | Path, *, backend: str = "local", jobs: int = 2, repeats: int = 3,
                   task_ids: list[str] | None = None, image: str | None = None,
                   progress: Callable[[ValidationResult], None] | None = None, cache: bool = False,
                   note: Callable[[str], None] | None = None,
                   say: Callable[[str], None] | None = None) -> list[ValidationResult]:
    """Validate every task of a suite (a Suite, or a path: then bad task files are results too,
    one per file), `jobs` tasks at a time in a pool of as many sandboxes.

    cache: reuse the results of tasks validated before with the same inputs, and store the new
    ones (`tasks.check.validate_cache`, in the suite directory); reused results have `cached` set.
    note: receives warnings about the cache (unreadable, unwritable).
    say: receives the progress of building the tasks' environments (built before any task runs,
    unless cached; a task whose environment cannot be built is invalid, with the reason)."""

    results: list[ValidationResult] = []
    if isinstance(suite, Suite):
        tasks, suite_dir = list(suite.tasks), suite.dir
    else:
        loaded, errors = load_suite_lenient(Path(suite))
        tasks, suite_dir = list(loaded.tasks), loaded.dir
        for file, err in errors:
            res = ValidationResult(Path(file).stem, ok=False, reasons=[str(err)], file=str(file))
            results.append(res)
            if progress:
                progress(res)
    if task_ids:
        known = {t.id for t in tasks}
        missing = [i for i in task_ids if i not in known]
        if missing:
            raise TaskError(f"no task(s) {', '.join(missing)} in the suite")
        tasks = [t for t in tasks if t.id in set(task_ids)]
    store = ValidationCache(suite_dir, backend=backend, repeats=repeats, image=image, note=note) if cache else None
    done: dict[str, ValidationResult] = {}
    keys: dict[str, str | None] = {}
    for task in tasks:
        keys[task.id] = store.key(task) if store else None
        hit = store.get(task, keys[task.id]) if store else None
        if hit is not None:
            done[task.id] = _cached_result(hit, task)
            if progress:
                progress(done[task.id])
    why = image_unsupported(backend, image)
    if why:
        raise SandboxConfigError(f"--image {image}: {why}")
    for task in tasks:   # not a verdict on the task: the backend cannot run it (never cached)
        problem = image_problem(task, backend) if image is None else None
        if problem:   # over a cached result too: one stored before images were refused here
            done[task.id] = ValidationResult(task.id, ok=False, reasons=[problem],
                                             file=str(task.source_file) if task.source_file else None)
            if progress:
                progress(done[task.id])
    todo = [t for t in tasks if t.id not in done]
    require_images(backend, {image or t.image for t in todo})   # said once, before any sandbox starts
    broken = build_environments(todo, backend, say or (lambda line: None))
    if store:   # keyed by what the sandboxes run: an environment built just now has its key only now
        store.forget_runtimes()
        keys.update({t.id: store.key(t) for t in todo})
    for task in [t for t in todo if t.env_tag in broken]:
        why = broken[str(task.env_tag)]
        res = ValidationResult(task.id, ok=False, reasons=[why], first_error=why.splitlines()[0],
                               file=str(task.source_file) if task.source_file else None)
        done[task.id] = res
        if progress:
            progress(res)
    todo = [t for t in todo if t.id not in done]
    try:
        if todo:
            _validate_all(todo, done, backend=backend, jobs=jobs, repeats=repeats, image=image, progress=progress,
                          store=(lambda t, r: store.put(t, keys[t.id], r.to_json())) if store else None)
    finally:
        if store:
            store.save()
    results += [done[t.id] for t in tasks]
    return results


def _cached_result(data: dict, task: Task) -> ValidationResult:
    res = ValidationResult(**{**data, "cached": True})
    res.file = str(task.source_file) if task.source_file else None
    return res


def _validate_all(tasks: list[Task], done: dict[str, ValidationResult], *, backend: str, jobs: int, repeats: int,
                  image: str | None, progress: Callable[[ValidationResult], None] | None,
                  store: Callable[[Task, ValidationResult], None] | None) -> None:
    """Validate `tasks` `jobs` at a time into `done` (by id); `store` each result as it comes."""
    jobs = max(1, int(jobs))
    with SandboxPool(jobs, backend=backend, image=image) as pool, ThreadPoolExecutor(jobs) as ex:
        futures = {ex.submit(validate_task, t, pool, repeats): t for t in tasks}
        for fut in as_completed(futures):
            task = futures[fut]
            try:
                res = fut.result()
            except Exception as e:  # noqa: BLE001 - one broken task must not stop the others
                res = ValidationResult(task.id, ok=False, reasons=[f"validation crashed: {type(e).__name__}: {e}"],
                                       file=str(task.source_file) if task.source_file else None)
            done[task.id] = res
            if store:
                store(task, res)
            if progress:
                progress(res)

"""fixrl bench repos: the conformance table -- released source distributions of real libraries,
each generated into a suite (`fixrl tasks generate`, its own validation included), then played
by the oracle and the blind policy in pooled sandboxes.

    fixrl bench repos [--libs toolz,inflection,...] [--max-tasks 8] [--workers 1] [--json]

Each library is downloaded as released (`pip download --no-binary :all: --no-deps NAME==VER`,
versions pinned in `LIBS`) into a cache and unpacked; a library whose sdist has no tests is
replaced by one of the same kind (`Lib.stands_in_for` says which). Per library: the environment's
build time, tasks emitted (written by the generator) / valid / dropped as flaky, the oracle's pass
rate over every valid task in a pool of `pool_size` reused sandboxes, the blind policy's, the
minutes and candidates per minute of the generator, and, under 8 valid tasks, why.

Libraries are run one at a time (the machine is shared: each generator run already uses
`workers` sandboxes). `LIBS` holds each one's test command as a user would write it: its
pytest options (`-o pythonpath=src` for a `src/` layout) and the test files left out because
they need a package the library does not ship (said in `Lib.note`).

What this does not guarantee: that the figures repeat on another machine (the minutes are wall
time on whatever else runs there), nor that a library's newest release still has tests in its sdist.
Every library runs in its environment (`build_environment`, timed: the "env s" column): the
`environment:` its packaging files call for (`fixrl env detect`), plus the packages of `Lib.needs`
that detection does not name (the row lists them: detection's gaps), written into the suite's
`suite.yaml` (where the generator reads it) and built for the backend before the generator runs.
The generator's runs, its validation and the episodes then all use that environment. A library
whose environment cannot be built is not run; its row says why.
"""
from __future__ import annotations

import functools
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from rich.table import Table

from fixrl import tasks as tasks_pkg
from fixrl.envs import EnvConfig
from fixrl.harness.agent.policies.scripted import ScriptedPolicy
from fixrl.harness.agent.rollouts import open_rollouts
from fixrl.harness.bench import sdist
from fixrl.harness.bench.errors import BenchError
from fixrl.harness.model.tiny import qwen25_tokenizer
from fixrl.sandbox import SandboxConfig
from fixrl.sandbox.environment import EnvBuildError, EnvSpec, env_dir
from fixrl.sandbox.environment import build_environment as build_env_spec
from fixrl.tasks.format.environment import detect_environment, spec_of
from fixrl.tasks.generate.config import GenerateError
from fixrl.tasks.generate.pipeline import generate
from fixrl.tasks.generate.report import GenerateReport
from fixrl.tasks.generate.staging import dump_yaml, write_atomic

TARGET = 8
"""Valid tasks a library should yield (issue 32); below it the row says why."""


@dataclass(frozen=True)
class Lib:
    """One library of the table: which release, and how its tests run."""

    name: str
    """The PyPI name."""
    version: str
    test_cmd: str
    """Its pytest command, run in the unpacked sdist."""
    files: tuple[str, ...] | None = None
    """`--files` for the generator (a large library: the modules its tests exercise most)."""
    needs: tuple[str, ...] = ()
    """Packages its code or tests import beyond the standard library and pytest: its environment
    has them (those its packaging files do not name are added to `environment.packages`)."""
    stands_in_for: str | None = None
    """The library of issue 32's list this one replaces (that one's sdist has no tests)."""
    baseline_timeout: float = 600.0
    """The generator's `--baseline-timeout` (a suite slower than 10 minutes under coverage)."""
    note: str = ""


LIBS: tuple[Lib, ...] = (
    Lib("click", "8.5.1", "python -m pytest -q -o pythonpath=src tests"),
    Lib("flask", "3.1.3", "python -m pytest -q -o pythonpath=src tests",
        needs=("werkzeug", "jinja2", "itsdangerous", "click", "blinker", "asgiref", "python-dotenv"),
        note="environment: its `tests` dependency group, pinned from its uv.lock (werkzeug 3.1.5, pytest 9.0.2): "
             "unpinned, pytest 9.2 errors every test and werkzeug 3.1.9 fails test_bad_environ_raises_bad_request"),
    Lib("itsdangerous", "2.2.0", "python -m pytest -q -o pythonpath=src tests", needs=("freezegun",)),
    Lib("werkzeug", "3.1.9", "python -m pytest -q -o pythonpath=src -m 'not dev_server' --timeout=60 tests",
        needs=("markupsafe", "pytest-timeout", "ephemeral-port-reserve", "watchdog", "cryptography"),
        note="left out: the `dev_server` tests (a live server in a subprocess, on a local port): their fixture "
             "polls the server until it answers, with no time limit, so a bug that stops the server hangs the "
             "run until the candidate's time limit (minutes each); `--timeout=60` (pytest-timeout, in its "
             "tests group) makes any other hang a failure"),
    Lib("jinja2", "3.1.6", "python -m pytest -q -o pythonpath=src tests", needs=("markupsafe", "trio"),
        note="environment: `requirements/tests.txt` only, one file of its pip-compile test family (not "
             "tests37.txt, nor the dev/docs/typing families, whose pins conflict)"),
    Lib("markupsafe", "3.0.4", "python -m pytest -q -o pythonpath=src tests",
        note="pure-Python implementation (the C speedups are not built; their tests skip)"),
    Lib("attrs", "26.1.0", "python -m pytest -q -o pythonpath=src tests", needs=("hypothesis",)),
    Lib("cattrs", "26.2.1", "FAST=1 python -m pytest -q -o pythonpath=src tests",
        needs=("attrs", "hypothesis", "immutables", "ujson", "orjson", "msgpack", "pyyaml", "tomlkit", "cbor2",
               "pymongo", "msgspec", "tomli-w"),
        baseline_timeout=1800.0,
        note="its tests import every optional extra's module (its CI installs all extras: `uv sync --all-extras`); "
             "FAST=1 picks its conftest's own `fast` hypothesis profile (10 examples a test): with the default one "
             "the baseline ran past its 600 s limit here"),
    Lib("marshmallow", "4.4.0", "python -m pytest -q -o pythonpath=src tests", needs=("simplejson",)),
    Lib("python-dateutil", "4.0.0", "python -m pytest -q -o pythonpath=src tests",
        needs=("freezegun", "hypothesis")),
    Lib("pyparsing", "3.3.3", "python -m pytest -q tests --ignore=tests/test_diagram.py "
        "--ignore=tests/test_matplotlib_cases.py --ignore=tests/test_examples.py --ignore=tests/test_unit.py",
        files=("pyparsing/core.py", "pyparsing/helpers.py", "pyparsing/util.py"),
        note="left out: the diagram, matplotlib and examples tests (railroad-diagrams, jinja2, matplotlib), and "
             "the 11,690-line tests/test_unit.py: it runs nearly all of core.py in every test (210 s against 13 s "
             "for the other files), so each candidate ran it whole (0.3 candidates/min)"),
    Lib("sqlparse", "0.6.1", "python -m pytest -q tests"),
    Lib("wcwidth", "0.9.4", "WCWIDTH_PYTHON=1 python -m pytest -q -o addopts= tests",
        note="pure-Python implementation (WCWIDTH_PYTHON=1: the C extension is not built); `-o addopts=` "
             "drops tox.ini's coverage options (pytest-cov), as its pyproject's own `--no-cov` run does"),
    Lib("configargparse", "1.9.0", "python -m pytest -q tests", stands_in_for="docopt",
        note="docopt 0.6.2's sdist has no tests, and its fork docopt-ng 0.9.0's conftest needs pytest < 9: "
             "another command-line parser in one module"),
    Lib("toolz", "1.2.0", "python -m pytest -q toolz/tests"),
    Lib("more-itertools", "11.2.1", "python -m pytest -q tests/test_more.py", files=("more_itertools/more.py",)),
    Lib("cachetools", "8.0.2", "python -m pytest -q -o pythonpath=src tests"),
    Lib("tabulate", "0.10.0", "python -m pytest -q test"),
    Lib("boltons", "26.2.0", "python -m pytest -q tests",
        files=("boltons/strutils.py", "boltons/iterutils.py", "boltons/listutils.py")),
    Lib("inflection", "0.5.1", "python -m pytest -q test_inflection.py"),
)


@dataclass
class Config:
    """`fixrl bench repos`."""

    libs: list[str] | None = None
    """Only these libraries (PyPI names from the table; default: all of them)."""
    max_tasks: int = TARGET
    """The generator's `--max`."""
    workers: int = 1
    """The generator's `-j` (sandboxes testing candidates at once)."""
    repeats: int = 2
    """Validation runs of each check per state (a task whose verdicts differ is dropped as flaky)."""
    pool_size: int = 1
    """Sandboxes the oracle's and the blind policy's episodes share (1: every episode reuses one)."""
    episodes: int = 1
    """Episodes per task for the oracle and the blind policy."""
    seed: int = 0
    """The generator's seed and the episodes'."""
    backend: Literal["local", "docker"] = "local"
    """Sandbox backend of the generator, the validation and the episodes."""
    cache: str | None = None
    """Where sdists are downloaded and unpacked (default: ~/.cache/fixrl/sdists, shared with the tests)."""
    out: str | None = None
    """Where the suites are written, one folder per library (default: a `bench-repos` folder in the cache)."""


@dataclass(frozen=True)
class EnvBuild:
    """What building a library's environment did."""

    seconds: float
    tag: str | None = None
    """Its `fixrl-env:<hash>` (None: the library needs none)."""
    cached: bool = False
    """It was built before (the seconds are a cache lookup, not a build)."""
    note: str = ""


@dataclass
class Row:
    """One library's line of the table."""

    library: str
    version: str
    test_cmd: str
    stands_in_for: str | None = None
    note: str = ""
    env_build_s: float = 0.0
    env: str = "none needed"
    """The environment's tag and how it came about, or "none needed"."""
    environment: dict[str, Any] | None = None
    """The `environment:` mapping the library's suite runs in."""
    env_added: list[str] = field(default_factory=list)
    """`Lib.needs` its packaging files do not name (detection's gaps, added by the table)."""
    emitted: int = 0
    valid: int = 0
    flaky_dropped: int = 0
    invalid: int = 0
    oracle: dict[str, Any] = field(default_factory=dict)
    blind: dict[str, Any] = field(default_factory=dict)
    valid_but_oracle_failed: list[str] = field(default_factory=list)
    """Tasks validation called valid whose oracle episode did not pass (must stay empty)."""
    minutes: float = 0.0
    candidates_per_min: float = 0.0
    candidates: int = 0
    kept: int = 0
    reused: int = 0
    """Candidate outcomes read back from the suite's journal of an earlier run (candidates/min
    then counts only this run's)."""
    reason: str | None = None
    """Why fewer than TARGET valid tasks (None at or above it)."""
    suite: str | None = None


def fetch_sdist(lib: Lib, cache: Path) -> Path:
    """The unpacked sdist of `lib` (downloaded once with pip into `cache`): its top folder."""
    return sdist.fetch_sdist(lib.name, lib.version, cache)


_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _named(lines: list[str]) -> set[str]:
    """The project names requirement lines name (comments and pip options skipped)."""
    names = set()
    for line in lines:
        m = _NAME.match(line.split("#", 1)[0])
        if m and not line.lstrip().startswith("-"):
            names.add(_canon(m.group(1)))
    return names


def _declared(src: Path, env: dict[str, Any]) -> set[str]:
    """What `env` installs by name: its packages, its requirement files' lines and, with
    `install`, the sdist's `Requires-Dist` (PKG-INFO) without an extra or with one of its extras."""
    lines = list(env.get("packages", []))
    for req in env.get("requirements", []):
        lines += (src / req).read_text(encoding="utf-8", errors="replace").splitlines()
    pkg_info = src / "PKG-INFO"
    if env.get("install") and pkg_info.is_file():
        extras = {_canon(e) for e in env.get("extras", [])}
        for line in pkg_info.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.startswith("Requires-Dist:"):
                continue
            req = line.split(":", 1)[1]
            extra = re.search(r"""extra\s*==\s*['"]([^'"]+)['"]""", req)
            if extra is None or _canon(extra.group(1)) in extras:
                lines.append(req)
    return _named(lines)


def library_environment(lib: Lib, src: Path) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """The `environment:` of `lib`'s suite: what its packaging files call for (`fixrl env
    detect`) plus the `Lib.needs` they do not name (returned second); None when it needs none."""
    env = detect_environment(src) or {}
    added = tuple(n for n in lib.needs if _canon(n) not in _declared(src, env))
    if added:
        env["packages"] = list(env.get("packages", [])) + list(added)
    return (env or None), added


def build_environment(env: dict[str, Any] | None, src: Path, backend: str, suite: Path) -> EnvBuild:
    """A library's environment (`library_environment`), written into `suite`'s suite.yaml (the
    generator's runs use a suite's `environment:`) and built for `backend` unless cached.
    EnvBuildError when it cannot be built."""
    t0 = time.monotonic()
    _set_suite_environment(suite, env)
    if env is None:
        return EnvBuild(round(time.monotonic() - t0, 1), note="none needed")
    try:
        spec = spec_of(env, src)
    except ValueError as e:
        raise EnvBuildError(f"the environment {env} is not valid: {e}") from None
    cached = _is_built(spec, backend)
    lib_env = spec.tag()   # the build's steps and pip's news on stderr: a build of a minute is never silent
    tag = build_env_spec(spec, backend, lambda line: print(f"  {lib_env}: {line}", file=sys.stderr, flush=True))
    return EnvBuild(round(time.monotonic() - t0, 1), tag, cached, note=f"{tag} ({'cached' if cached else 'built'})")


def _is_built(spec: EnvSpec, backend: str) -> bool:
    if backend == "docker":
        from fixrl.sandbox.environment import docker_env_current  # noqa: PLC0415 - the docker SDK only for Docker

        return docker_env_current(spec)
    return (env_dir(spec.tag()) / "bin" / "python").exists()


def _set_suite_environment(suite: Path, env: dict[str, Any] | None) -> None:
    """`suite`'s suite.yaml with `environment:` set to `env` (removed for None); other keys kept.
    No suite.yaml is made for a library that needs no environment."""
    file = suite / "suite.yaml"
    config = yaml.safe_load(file.read_text(encoding="utf-8")) if file.is_file() else None
    config = config if isinstance(config, dict) else {}
    if config.get("environment") == env or (env is None and "environment" not in config):
        return
    if env is None:
        config.pop("environment")
    else:
        config["environment"] = env
    suite.mkdir(parents=True, exist_ok=True)
    write_atomic(file, dump_yaml(config))


def _drop_bare_suite_yaml(suite: Path) -> None:
    """After a run with no valid task: the suite.yaml this table wrote (only `environment:`)
    goes, as the generator leaves no suite.yaml then; one with more in it stays."""
    file = suite / "suite.yaml"
    if file.is_file() and set((yaml.safe_load(file.read_text(encoding="utf-8")) or {}).keys()) <= {"environment"}:
        file.unlink()


def chosen_libs(names: list[str] | None) -> list[Lib]:
    """The table's libraries, or those `names` picks (BenchError naming an unknown one)."""
    if not names:
        return list(LIBS)
    known = {lib.name: lib for lib in LIBS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BenchError(f"--libs {' '.join(unknown)}: not in the table; known: {', '.join(known)}")
    return [known[n] for n in names]


def measure(cfg: Config) -> dict[str, Any]:
    """Every chosen library, one at a time; the rows and their totals."""
    cache = Path(cfg.cache).expanduser() if cfg.cache else Path.home() / ".cache" / "fixrl" / "sdists"
    out = Path(cfg.out).expanduser() if cfg.out else cache / "bench-repos"
    if cfg.max_tasks < 1 or cfg.workers < 1 or cfg.pool_size < 1 or cfg.episodes < 1 or cfg.repeats < 1:
        raise BenchError("bench repos: max-tasks, workers, pool-size, episodes and repeats must be >= 1")
    libs = chosen_libs(cfg.libs)
    rows = [run_lib(lib, cfg, cache, out, _tokenizer) for lib in libs]
    ran = [r for r in rows if r.emitted]
    return {"backend": cfg.backend, "workers": cfg.workers, "max_tasks": cfg.max_tasks, "pool_size": cfg.pool_size,
            "repeats": cfg.repeats, "target": TARGET, "rows": [r.__dict__ for r in rows],
            "libs_at_target": sum(r.valid >= TARGET for r in rows), "libs": len(rows),
            "oracle_all_pass": all(r.oracle.get("rate") == 1.0 for r in ran),
            "valid_but_oracle_failed": sum(len(r.valid_but_oracle_failed) for r in rows)}


def run_lib(lib: Lib, cfg: Config, cache: Path, out: Path, tokenizer: Callable[[], Any]) -> Row:
    """One library: download, environment, generate (with validation), oracle and blind episodes."""
    row = Row(lib.name, lib.version, lib.test_cmd, lib.stands_in_for, lib.note)
    t0 = time.monotonic()
    try:
        src = fetch_sdist(lib, cache)
    except BenchError as e:
        row.reason = str(e)
        return row
    suite = out / f"{lib.name}-{lib.version}"
    row.suite = str(suite)
    environment, added = library_environment(lib, src)
    row.environment, row.env_added = environment, list(added)
    try:
        env = build_environment(environment, src, cfg.backend, suite)
    except EnvBuildError as e:
        row.reason = f"environment: {str(e)[:400]}"
        row.minutes = round((time.monotonic() - t0) / 60, 1)
        return row
    row.env_build_s, row.env = env.seconds, env.note
    try:
        report = generate(src, lib.test_cmd, suite, max_tasks=cfg.max_tasks, seed=cfg.seed, backend=cfg.backend,
                          workers=cfg.workers, files=list(lib.files) if lib.files else None,
                          repeats=cfg.repeats, baseline_timeout=lib.baseline_timeout, progress=True,
                          progress_every=60.0)
    except GenerateError as e:
        _drop_bare_suite_yaml(suite)
        row.reason = f"generate: {str(e)[:400]}"
        row.minutes = round((time.monotonic() - t0) / 60, 1)
        return row
    row.emitted, row.valid, row.invalid = report.selected, report.valid, report.invalid
    row.flaky_dropped, row.candidates, row.kept = report.flaky, report.candidates, report.kept
    row.candidates_per_min, row.reused = report.candidates_per_minute, report.reused
    if report.valid:
        loaded = tasks_pkg.load_suite(suite)
        chosen = [t for t in loaded.tasks if t.id in set(report.task_ids)]
        oracle = _episodes(loaded, chosen, "oracle", cfg, tokenizer)
        row.oracle, row.blind = _rate(oracle), _rate(_episodes(loaded, chosen, "blind", cfg, tokenizer))
        row.valid_but_oracle_failed = sorted({t.task_id for t in oracle if t.info.outcome != "pass"})
    else:
        _drop_bare_suite_yaml(suite)
    row.minutes = round((time.monotonic() - t0) / 60, 1)
    row.reason = None if row.valid >= TARGET else why_short(report)
    return row


@functools.cache
def _tokenizer() -> Any:
    """The scripted policies' tokenizer, loaded once and only when some library has tasks to play."""
    return qwen25_tokenizer()


def _episodes(suite, chosen, kind: str, cfg: Config, tokenizer: Callable[[], Any]) -> list:
    policy = ScriptedPolicy(kind, tokenizer=tokenizer(), seed=cfg.seed)
    with open_rollouts(suite, EnvConfig(), SandboxConfig(backend=cfg.backend, pool_size=cfg.pool_size)) as r:
        return r.run(policy, chosen, cfg.episodes, cfg.seed)


def _rate(trajs: list) -> dict[str, Any]:
    passed = sum(t.info.outcome == "pass" for t in trajs)
    errors = sum(t.info.outcome == "error" for t in trajs)
    return {"passed": passed, "episodes": len(trajs), "errors": errors,
            "rate": round(passed / len(trajs), 2) if trajs else None}


def why_short(report: GenerateReport) -> str:
    """Why a generator run yielded fewer than TARGET valid tasks, from its report's counts."""
    parts = [f"{report.candidates} candidates, {report.tested} tested, {report.kept} kept"]
    if report.no_issue_reasons:
        top = sorted(report.no_issue_reasons.items(), key=lambda x: -x[1])[:2]
        parts.append("no issue text: " + "; ".join(f"{n}x {why}" for why, n in top))
    if report.invalid:
        first = next(iter(report.invalid_reasons.values()), "")
        parts.append(f"{report.invalid} invalid ({report.flaky} flaky), e.g. {first[:160]}")
    if report.kept < TARGET and report.tested < report.candidates:
        parts.append("the search stopped before testing every candidate")
    return "; ".join(parts)


def show(r: dict[str, Any], console: Any) -> None:
    """The conformance table."""
    t = Table(title=f"fixrl bench repos: {r['libs_at_target']} of {r['libs']} libraries with >= {r['target']} "
                    f"valid tasks ({r['backend']} backend, -j {r['workers']}, pool of {r['pool_size']})")
    for col in ("library", "env s", "emitted", "valid", "flaky", "oracle", "blind", "min", "cand/min", "why < 8"):
        t.add_column(col, justify="left" if col in ("library", "why < 8") else "right")
    for row in r["rows"]:
        name = f"{row['library']} {row['version']}" + (f" (for {row['stands_in_for']})" if row["stands_in_for"] else "")
        t.add_row(name, f"{row['env_build_s']:g}", str(row["emitted"]), str(row["valid"]), str(row["flaky_dropped"]),
                  _frac(row["oracle"]), _frac(row["blind"]), f"{row['minutes']:g}", f"{row['candidates_per_min']:g}",
                  row["reason"] or "")
    console.print(t)
    console.print(f"valid tasks the oracle failed: {r['valid_but_oracle_failed']}")


def _frac(d: dict[str, Any]) -> str:
    return f"{d['passed']}/{d['episodes']} = {d['rate']:.2f}" if d else "-"

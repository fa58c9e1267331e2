"""Detecting a repository's environment (the task format's `environment:`) from its packaging
files: `pyproject.toml` (dependencies, test extras, PEP 735 dependency groups), `setup.cfg`,
`setup.py` (literal `install_requires` / `extras_require` only), requirement files and
`tox.ini`'s test dependencies. `tasks generate`, `tasks new` and `tasks import-swebench` write
what it finds into the suite.

What it does NOT guarantee: that the list is complete (dependencies computed at build time by
code in `setup.py`, tox substitutions and conditional requirements are not read) or minimal
(a test extra may pull in more than the tests use). A suite's `environment` is the user's to
edit; detection only writes one where none is set.
"""
from __future__ import annotations

import ast
import configparser
import io
import re
import subprocess
import tarfile
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fixrl.sandbox.environment import EnvSpec, build_environment, cache_root
from fixrl.sandbox.factory import DEFAULT_IMAGE
from fixrl.tasks.format.schema import Environment

TEST_NAMES = ("test", "tests", "testing")
"""Extras and dependency groups that hold test dependencies (preferred)."""
DEV_NAMES = ("dev", "develop")
"""Used when no test-named one exists."""
_REQ_FILE = re.compile(r"^requirements[-_.]?(test|tests|testing|dev|ci)?[-_.a-z0-9]*\.txt$", re.I)
_ONLY_PYTEST = re.compile(r"^pytest\s*([<>=!~;].*)?$", re.I)


def _pick(names: list[str]) -> list[str]:
    found = [n for n in names if n.lower() in TEST_NAMES]
    return found or [n for n in names if n.lower() in DEV_NAMES]


def _pyproject(repo: Path, env: dict[str, Any]) -> None:
    path = repo / "pyproject.toml"
    if not path.is_file():
        return
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return
    project = data.get("project") or {}
    if project.get("dependencies"):
        env["install"] = True
    extras = _pick(list((project.get("optional-dependencies") or {}).keys()))
    if extras:
        env["install"] = True
        env["extras"] += extras
    groups = data.get("dependency-groups") or {}
    for name in _pick(list(groups)):
        env["packages"] += [g for g in groups[name] if isinstance(g, str)]
    pdm = ((data.get("tool") or {}).get("pdm") or {}).get("dev-dependencies") or {}
    for name in _pick(list(pdm)):
        env["packages"] += [g for g in pdm[name] if isinstance(g, str) and not g.startswith("-e")]


def _read_ini(path: Path) -> configparser.ConfigParser | None:
    """`path` parsed as an ini file, or None where it is missing or unreadable: a packaging file
    detection cannot read names nothing (the others may still)."""
    if not path.is_file():
        return None
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    return cfg


def _setup_cfg(repo: Path, env: dict[str, Any]) -> None:
    cfg = _read_ini(repo / "setup.cfg")
    if cfg is None:
        return
    if cfg.get("options", "install_requires", fallback="").strip():
        env["install"] = True
    if cfg.has_section("options.extras_require"):
        extras = _pick(cfg.options("options.extras_require"))
        if extras:
            env["install"] = True
            env["extras"] += extras


def _setup_py(repo: Path, env: dict[str, Any]) -> None:
    path = repo / "setup.py"
    if not path.is_file():
        return
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            try:
                value = ast.literal_eval(kw.value)
            except (ValueError, SyntaxError, TypeError):
                # Only the extras' names are read: `{"test": tests_require}` (a variable as the
                # value, configargparse) still names its extras.
                if kw.arg != "extras_require" or not isinstance(kw.value, ast.Dict):
                    continue
                value = {k.value: None for k in kw.value.keys
                         if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if kw.arg == "install_requires" and value:
                env["install"] = True
            elif kw.arg == "extras_require" and isinstance(value, dict):
                extras = _pick([str(k) for k in value])
                if extras:
                    env["install"] = True
                    env["extras"] += extras


def _requirement_files(repo: Path, env: dict[str, Any]) -> None:
    found = [p for p in sorted(repo.glob("requirements*.txt")) if _REQ_FILE.match(p.name)]
    folder = repo / "requirements"
    if folder.is_dir():
        found += [p for p in sorted(folder.glob("*.txt"))
                  if any(word in p.stem.lower() for word in TEST_NAMES + ("ci",))]
    tests = [p for p in found if any(w in p.name.lower() for w in TEST_NAMES + ("ci",))]
    chosen = tests or [p for p in found if "dev" in p.name.lower() or p.name == "requirements.txt"]
    for p in chosen:
        if not any(_is_local_reference(line) for line in p.read_text(encoding="utf-8", errors="replace").splitlines()):
            env["requirements"].append(p.relative_to(repo).as_posix())


def _is_local_reference(line: str) -> bool:
    """A requirement line that names the repository itself or a path (`-e .`, `.[test]`): the
    environment installs the repository by `install`, never from a requirement file."""
    line = line.split("#", 1)[0].strip()
    return line.startswith(("-e", ".", "/", "file:")) or line in (".",)


def _tox(repo: Path, env: dict[str, Any]) -> None:
    cfg = _read_ini(repo / "tox.ini")
    if cfg is None or not cfg.has_section("testenv"):
        return
    for line in cfg.get("testenv", "deps", fallback="").splitlines():
        line = _for_tests(line.split("#", 1)[0].strip())
        if not line or "{" in line or _is_local_reference(line) or line.startswith("-c"):
            continue
        if line.startswith("-r"):
            rel = line[2:].strip()
            if (repo / rel).is_file() and rel not in env["requirements"]:
                env["requirements"].append(rel)
            continue
        env["packages"].append(line)
    extras = [_for_tests(e.strip()) for e in cfg.get("testenv", "extras", fallback="").splitlines()]
    extras = [x.strip() for e in extras for x in e.split(",")]
    extras = [e for e in extras if e and "{" not in e]
    if extras:
        env["install"] = True
        env["extras"] += extras


_FACTORED = re.compile(r"^([\w.!,-]+)\s*:\s*(?!//)(.*)$")
"""A tox factor-conditional setting line, `unit-!py315t: matplotlib` (not a URL's scheme)."""
NOT_TEST_FACTORS = frozenset({"doc", "docs", "doctest", "doctests", "lint", "linting", "mypy", "typing", "types",
                              "type", "typecheck", "style", "flake8", "pep8", "black", "ruff", "pylint", "format",
                              "build", "release", "publish", "bench", "benchmark", "benchmarks", "coverage", "cov",
                              "manifest", "spell", "codespell", "readme"})
"""tox factors of environments that run no tests: a line conditional on only these is left out
(docs and linters would only make the environment slower to build and more likely to fail)."""


def _for_tests(line: str) -> str:
    """A tox setting line as a test run sees it: a factor-conditional line (`py311: attrs`,
    `unit-!pypy: x`, `docs,lint: sphinx`) without its condition, or "" when every alternative of
    the condition names only non-test factors (NOT_TEST_FACTORS)."""
    if "{" in line:  # a tox substitution: its value is not known here
        return ""
    m = _FACTORED.match(line)
    if m is None or line.startswith(("-r", "-c")):
        return line
    for alternative in m.group(1).split(","):
        wanted = [f for f in alternative.split("-") if f and not f.startswith("!")]
        if not wanted or not all(f.lower() in NOT_TEST_FACTORS for f in wanted):  # `!pypy:` holds for the rest
            return m.group(2).strip()
    return ""


def detect_environment(repo: Path) -> dict[str, Any] | None:
    """The `environment:` mapping `repo`'s packaging files call for; None when they name no
    dependency beyond pytest (the sandbox's own interpreter then serves, as before)."""
    repo = Path(repo)
    env: dict[str, Any] = {"install": False, "extras": [], "requirements": [], "packages": []}
    for read in (_pyproject, _setup_cfg, _setup_py, _requirement_files, _tox):
        read(repo, env)
    env["extras"] = list(dict.fromkeys(env["extras"]))
    env["packages"] = [p for p in dict.fromkeys(env["packages"]) if not _ONLY_PYTEST.match(p)]
    env["requirements"] = list(dict.fromkeys(env["requirements"]))
    if not (env["install"] or env["packages"] or env["requirements"]):
        return None
    return {k: v for k, v in env.items() if v}


def commit_tree(git_dir: Path, commit: str) -> Path:
    """The files of `commit` in `git_dir`, extracted once into the environment cache: what an
    environment of a task on a commit reads (its packaging files, its wheel), never the
    checkout's working tree, which may hold another version."""
    sha = subprocess.run(["git", "-C", str(git_dir), "rev-parse", f"{commit}^{{commit}}"],
                         capture_output=True, text=True).stdout.strip()
    if not sha:
        raise ValueError(f"{commit!r} is not a commit of {git_dir}")
    dest = cache_root() / "src" / sha
    if not dest.is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
            archive = subprocess.run(["git", "-C", str(git_dir), "archive", "--format=tar", sha],
                                     capture_output=True, check=True).stdout
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(tmp, filter="data")
            Path(tmp).rename(dest)
    return dest


def spec_of(environment: dict[str, Any], repo: Path, base_image: str = DEFAULT_IMAGE) -> EnvSpec:
    """An `environment:` mapping (validated as the task format does) as the sandbox layer builds it."""
    env = Environment.model_validate(environment)
    return EnvSpec(repo=str(repo), install=env.install, extras=tuple(env.extras), requirements=tuple(env.requirements),
                   packages=tuple(env.packages), python=env.python, base_image=base_image)


def detect_and_build(repo: Path, backend: str, progress: Callable[[str], None] = lambda s: None
                     ) -> tuple[dict[str, Any] | None, str | None]:
    """`repo`'s detected environment, built for `backend`: (its mapping, its tag), or (None,
    None) when it needs none. EnvBuildError when it cannot be built."""
    env = detect_environment(repo)
    if env is None:
        return None, None
    return env, build_environment(spec_of(env, repo), backend, progress)

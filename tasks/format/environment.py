"""Detecting a repository's environment (the task format's `environment:`) from its packaging
files: `pyproject.toml` (dependencies, test extras, PEP 735 dependency groups with
`include-group`), `setup.cfg`, `setup.py` (literal `install_requires` / `extras_require` only),
requirement files (one per pip-compile family: `_requirement_files`) and `tox.ini`'s test
dependencies; with a `uv.lock`, what it names is pinned to the locked versions. A repository
whose tests read installed metadata (`importlib.metadata`) is installed itself. `tasks
generate`, `tasks new` and `tasks import-swebench` write what it finds into the suite.

What it does NOT guarantee: that the list is complete (dependencies computed at build time by
code in `setup.py`, tox substitutions and conditional requirements are not read) or minimal
(a test extra may pull in more than the tests use); that a family's file is the one CI used
(per-Python files are matched to fixrl's Python by name only); that transitive dependencies are
pinned (only what the packaging files name, and pytest, take the lock's versions; pip resolves
the rest when the environment is built). A suite's `environment` is the user's to
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

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement

from fixrl.sandbox.environment import EnvSpec, build_environment, cache_root, host_python
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
        env["named"] += [d for d in project["dependencies"] if isinstance(d, str)]
    optional = project.get("optional-dependencies") or {}
    extras = _pick(list(optional.keys()))
    if extras:
        env["install"] = True
        env["extras"] += extras
        env["named"] += [d for e in extras for d in optional[e] or [] if isinstance(d, str)]
    groups = data.get("dependency-groups") or {}
    for name in _pick(list(groups)):
        env["packages"] += dependency_group(groups, name)
    pdm = ((data.get("tool") or {}).get("pdm") or {}).get("dev-dependencies") or {}
    for name in _pick(list(pdm)):
        env["packages"] += [g for g in pdm[name] if isinstance(g, str) and not g.startswith("-e")]


def _normal(name: str) -> str:
    """A project or group name as PEP 503 / PEP 735 compare them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def dependency_group(groups: dict[str, Any], name: str, _seen: tuple[str, ...] = ()) -> list[str]:
    """The requirements of PEP 735 group `name` of `groups` (pyproject's `[dependency-groups]`),
    its `{include-group = "..."}` entries expanded (names compared normalized; a cycle or an
    unknown group adds nothing: pip and uv refuse such a file, detection names what it can)."""
    by_name = {_normal(k): v for k, v in groups.items()}
    if _normal(name) in _seen or not isinstance(by_name.get(_normal(name)), list):
        return []
    out: list[str] = []
    for item in by_name[_normal(name)]:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            out += dependency_group(groups, item["include-group"], (*_seen, _normal(name)))
    return out


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


_REQ_SUFFIXES = (".txt", ".in")
_PY_TAG = re.compile(r"[-_.]?(?:py|python)?3[._]?(\d{1,2})$", re.I)
"""A per-Python requirement file's tag at the end of its family name: `tests37`, `py311`,
`tests-py3.12` (Python 3 only: `3` then the minor version)."""


def _family(path: Path) -> tuple[str, int | None]:
    """A requirement file's family and the Python 3 minor version it is for (None: any).
    pip-compile's `tests.in`, `tests.txt` (compiled from it) and `tests37.txt` (compiled for
    Python 3.7) are one family, `tests`; at the top, `requirements-dev.txt` is `dev` and
    `requirements.txt` is "" (the main family)."""
    stem = path.name[:-len(path.suffix)]
    if stem.lower().startswith("requirements"):
        stem = stem[len("requirements"):]
    m = _PY_TAG.search(stem)
    minor = int(m.group(1)) if m else None
    if m:
        stem = stem[:m.start()]
    return stem.strip("-_.").lower(), minor


def _family_words(family: str) -> list[str]:
    return [w for w in re.split(r"[-_.]+", family) if w]


def _kind(family: str) -> str:
    """`test`, `dev`, `main` (requirements.txt), `notest` (docs, typing, lint, build: never
    installed: their pins conflict with the tests' and nothing of theirs runs in a test), or
    `other` (a family of another name: `base`, `deps`; installed only when tox names it)."""
    words = _family_words(family)
    if any(("test" in w and w not in NOT_TEST_FACTORS) or w == "ci" for w in words):  # `doctest` is docs
        return "test"
    if any(w in NOT_TEST_FACTORS for w in words):
        return "notest"
    if any(w in DEV_NAMES for w in words):
        return "dev"
    return "main" if family == "" else "other"


def _preference(path: Path, minor: int | None, python_minor: int) -> tuple[int, int]:
    """Sort key of one file of a family (lowest first): the file compiled for exactly this
    Python, then the family's unversioned compiled `.txt` (its pins are what the project tests
    with), then its `.in` (unpinned: resolved for this Python), then the nearest older Python's,
    then the nearest newer one's."""
    if minor == python_minor:
        return (0, 0)
    if minor is None:
        return (1, 0) if path.suffix == ".txt" else (2, 0)
    if minor < python_minor:
        return (3, python_minor - minor)
    return (4, minor - python_minor)


def _requirement_candidates(repo: Path) -> list[Path]:
    found = [p for p in sorted(repo.glob("requirements*")) if p.is_file() and p.suffix in _REQ_SUFFIXES
             and _REQ_FILE.match(p.name[:-len(p.suffix)] + ".txt")]
    folder = repo / "requirements"
    if folder.is_dir():
        found += [p for p in sorted(folder.iterdir()) if p.is_file() and p.suffix in _REQ_SUFFIXES]
    return [p for p in found if not _has_local_reference(p)]


def _has_local_reference(path: Path) -> bool:
    return any(_is_local_reference(line)
               for line in path.read_text(encoding="utf-8", errors="replace").splitlines())


def _requirement_files(repo: Path, env: dict[str, Any]) -> None:
    """One requirement file per family (`_family`): the test families, else the dev and main
    ones; of each family the file `_preference` puts first. Installing every file of a folder
    (jinja2 3.1.6: `tests.txt` compiled for 3.13 beside `tests37.txt` for 3.7; `dev.txt`,
    `docs.txt`, `typing.txt` with their own pins) asks pip for conflicting pins."""
    families: dict[tuple[Path, str], list[tuple[Path, int | None]]] = {}
    for p in _requirement_candidates(repo):
        family, minor = _family(p)
        families.setdefault((p.parent, family), []).append((p, minor))
    kinds = {key: _kind(key[1]) for key in families}
    wanted = {"test"} if "test" in kinds.values() else {"dev", "main"}
    minor = int(host_python().split(".")[1])
    for key in sorted(families, key=lambda k: (k[0] != repo, k[1])):
        if kinds[key] in wanted:
            best = min(families[key], key=lambda f: _preference(f[0], f[1], minor))[0]
            env["requirements"].append(best.relative_to(repo).as_posix())


def _one_per_family(repo: Path, files: list[str]) -> list[str]:
    """`files` (detected, then named by tox) with at most one file of each family, the first,
    and none of a family that runs no tests (`_kind` "notest")."""
    kept: list[str] = []
    seen: set[tuple[str, str]] = set()
    for rel in files:
        path = repo / rel
        family, _ = _family(path)
        key = (path.parent.as_posix(), family)
        if key in seen or _kind(family) == "notest":
            continue
        seen.add(key)
        kept.append(rel)
    return kept


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


def _holds(marker: Marker) -> bool:
    """`marker` on this interpreter; False where it cannot be evaluated (an unknown name)."""
    try:
        return marker.evaluate()
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return False


def lock_versions(repo: Path) -> dict[str, str]:
    """The versions `repo`'s `uv.lock` resolved for this interpreter, by normalized name: the
    registry's packages only (the project itself is `editable`), of an entry forked by
    `resolution-markers` the one whose markers hold here. {} without a readable uv.lock."""
    path = repo / "uv.lock"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}
    versions: dict[str, str] = {}
    for pkg in data.get("package") or []:
        if not isinstance(pkg, dict) or "registry" not in (pkg.get("source") or {}):
            continue
        name, version, forks = pkg.get("name"), pkg.get("version"), pkg.get("resolution-markers") or []
        if not (isinstance(name, str) and isinstance(version, str)):
            continue
        try:
            if forks and not any(_holds(Marker(m)) for m in forks):
                continue
        except InvalidMarker:
            continue
        versions.setdefault(_normal(name), version)
    return versions


def _pinned(requirement: str, versions: dict[str, str]) -> str:
    """`requirement` pinned to the locked version (`name[extras]==V; marker`), or as it was:
    not a named requirement, not locked, its marker false here, or the lock outside its range."""
    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return requirement
    version = versions.get(_normal(req.name))
    if req.url or version is None or (req.marker is not None and not _holds(req.marker)):
        return requirement
    if not req.specifier.contains(version, prereleases=True):
        return requirement
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    return f"{req.name}{extras}=={version}" + (f"; {req.marker}" if req.marker else "")


def _pin_from_lock(repo: Path, env: dict[str, Any]) -> None:
    """With a `uv.lock`, pin what the environment names to the locked versions: its packages,
    the project's dependencies and test extras' requirements (`named`), and pytest. A release
    is tested with its lock (flask 3.1.3's tests fail with the newest werkzeug and need pytest
    9.0.x); unpinned, pip takes whatever is newest when the environment is built."""
    versions = lock_versions(repo)
    if not versions:
        return
    env["packages"] = [_pinned(p, versions) for p in env["packages"]]
    have = {_project_of(p) for p in env["packages"]}
    for requirement in [*env["named"], "pytest"]:
        pinned = _pinned(requirement, versions)
        if pinned != requirement and _project_of(pinned) not in have:
            env["packages"].append(pinned)
            have.add(_project_of(pinned))


_METADATA_READ = re.compile(r"\b(importlib\.metadata|importlib_metadata|pkg_resources)\b"
                            r"|\bfrom importlib import metadata\b")
_PACKAGING = ("pyproject.toml", "setup.py", "setup.cfg")


def _metadata_readers(repo: Path, env: dict[str, Any]) -> None:
    """An installable repository whose tests read installed distributions' metadata
    (`importlib.metadata.version("click")`, `pkg_resources`) is installed itself: with no
    other dependency, its tests would find the metadata only where something else happened to
    install the package (fixrl's own interpreter has click; the Docker image has not, and click
    8.5.1's tests/test_deprecations.py did not collect there)."""
    if env["install"] or not any((repo / name).is_file() for name in _PACKAGING):
        return
    for path in _test_sources(repo):
        try:
            if _METADATA_READ.search(path.read_text(encoding="utf-8", errors="replace")):
                env["install"] = True
                return
        except OSError:
            continue


def _test_sources(repo: Path) -> list[Path]:
    """The repository's test modules and conftests (test directories, and test-named files at
    the top), sorted."""
    found = {p for d in ("test", "tests", "testing") if (repo / d).is_dir() for p in (repo / d).rglob("*.py")}
    found |= {p for p in repo.glob("*.py") if p.name.startswith("test") or p.name == "conftest.py"}
    return sorted(found)


def _project_of(requirement: str) -> str:
    try:
        return _normal(Requirement(requirement).name)
    except InvalidRequirement:
        return requirement


def detect_environment(repo: Path) -> dict[str, Any] | None:
    """The `environment:` mapping `repo`'s packaging files call for; None when they name no
    dependency beyond pytest (the sandbox's own interpreter then serves, as before)."""
    repo = Path(repo)
    env: dict[str, Any] = {"install": False, "extras": [], "requirements": [], "packages": [], "named": []}
    for read in (_pyproject, _setup_cfg, _setup_py, _requirement_files, _tox, _metadata_readers):
        read(repo, env)
    env["extras"] = list(dict.fromkeys(env["extras"]))
    env["packages"] = [p for p in dict.fromkeys(env["packages"]) if not _ONLY_PYTEST.match(p)]
    env["requirements"] = _one_per_family(repo, list(dict.fromkeys(env["requirements"])))
    if not (env["install"] or env["packages"] or env["requirements"]):
        return None
    _pin_from_lock(repo, env)
    env.pop("named")
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

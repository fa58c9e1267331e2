"""The repository's own pytest `addopts`, as far as they choose which tests run and how they
behave, for the check's runner.

The runner always passes `-o addopts=`, so pytest never applies a configuration's `addopts`
itself: they may load plugins (`-p`, past the environment's plugin list), start coverage or
xdist, or collect the repository's docstrings as tests (`--doctest-modules`: text the agent can
edit). Dropping them all made the check run another test set than the command a user (and
fixrl's own baseline) runs: click's `addopts = "-m 'not stress'"` deselects 31,000
parametrised stress tests, and the `test` tool ran them all. `kept` keeps the options that
select tests or change outcomes (`-m`, `-k`, `-W`, `--ignore`, `--deselect`, ini overrides,
strictness), in pytest's order: before the command's own arguments, which win. A check that
names its tests leaves out the deselecting ones: configuration never removes a named test.

The configuration is read from the workspace: in a check that is the repository's own (the
agent's diff never carries a test path, `tasks.is_test_path`, and configuration files are
test paths). It is read in the supervisor, before the judged process starts.

What it does not do: honour `--import-mode`, `-p`, `--doctest-modules`, plugin options
(`--timeout`, `--cov`), or a configuration pytest would find through `-c`/`--rootdir` rules
other than the search from the arguments upward (the runner passes `--rootdir=.` and no `-c`).
"""
from __future__ import annotations

import os
import shlex

import iniconfig  # pytest's own ini parser: values read as pytest reads them
import pytest

try:
    import tomllib
except ImportError:  # Python < 3.11: pytest itself needs tomli there
    import tomli as tomllib

from .base import _abspath

_VALUED = {"-m", "-k", "-W", "--pythonwarnings", "--ignore", "--ignore-glob", "--deselect", "-o",
           "--override-ini"}
"""Options kept with their value (`-m EXPR`, `-mEXPR`, `--ignore=P`, `--ignore P`)."""
_FLAGS = {"--strict-markers", "--strict-config", "--strict"}
_DESELECTING = {"-m", "-k", "--deselect"}
_SHORT = {o for o in _VALUED if len(o) == 2}


def _toml(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


def _ini_section(path, section):
    ini = iniconfig.IniConfig(path)
    return dict(ini[section].items()) if section in ini else None


def _load(path, name):
    """The pytest settings of one candidate configuration file, or None when it has none
    (pytest then looks further); pytest.ini counts even when empty, as in pytest."""
    if name in ("pytest.toml", ".pytest.toml"):
        return _toml(path).get("pytest", {})
    if name in ("pytest.ini", ".pytest.ini"):
        return _ini_section(path, "pytest") or {}
    if name == "pyproject.toml":
        tool = _toml(path).get("tool", {}).get("pytest")
        if not isinstance(tool, dict):
            return None
        if "ini_options" in tool:
            return tool["ini_options"]
        return tool if _TOML_NAMES else None
    return _ini_section(path, "pytest" if name == "tox.ini" else "tool:pytest")


_TOML_NAMES = ("pytest.toml", ".pytest.toml") if pytest.version_tuple[:1] >= (9,) else ()
_NAMES = (*_TOML_NAMES, "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def configured(args, cwd):
    """The `addopts` of the configuration file pytest would use for `args` run in `cwd`, as a
    list of arguments (pytest's search: from each non-option argument upward, first file with
    pytest settings wins)."""
    paths = [a for a in args if not a.startswith("-")] or ["."]
    for arg in paths:
        base = _abspath(arg, cwd)
        while True:
            for name in _NAMES:
                path = base.rstrip("/") + "/" + name
                if os.path.isfile(path):
                    settings = _load(path, name)
                    if settings is not None:
                        value = settings.get("addopts", [])
                        return list(value) if isinstance(value, list) else shlex.split(str(value))
            if base == "/":
                break
            base = base.rsplit("/", 1)[0] or "/"
    return []


def kept(addopts, select=True):
    """The options of `addopts` (a list of arguments) that choose tests or change outcomes;
    select=False leaves out those that deselect (`-m`, `-k`, `--deselect`)."""
    out, i = [], 0
    while i < len(addopts):
        a = addopts[i]
        name = a.split("=", 1)[0] if a.startswith("--") else a[:2]
        if a in _FLAGS:
            out.append(a)
        elif name in _VALUED:
            attached = a != name
            value = (a[len(name) + 1:] if a.startswith("--") else a[2:]) if attached else \
                (addopts[i + 1] if i + 1 < len(addopts) else None)
            i += 0 if attached else 1
            if value is not None and not (name in ("-o", "--override-ini") and
                                          value.replace(" ", "").startswith("addopts=")) \
                    and (select or name not in _DESELECTING):
                out += [name, value]
        i += 1
    return out


def repository_addopts(args, cwd, override, select=True):
    """What the runner puts before `args`: the kept part of the command's own `-o addopts=...`
    when it has one (`override`, pytest's rule: the override replaces the file's), else of the
    configuration file's. select=False: the run names the tests it judges (a check), and
    configuration never deselects a test the check names."""
    try:
        return kept(shlex.split(override) if override is not None else configured(args, cwd), select)
    except (OSError, ValueError, iniconfig.ParseError):  # a file pytest cannot read either: it says why
        return []

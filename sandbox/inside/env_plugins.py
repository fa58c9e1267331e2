"""The pytest plugins an environment installs, and nothing else, in every run of a repository's
tests (the generator's baseline, candidates, the validation's checks, the `test` tool, the check).

Plugin autoloading (`pytest11` entry points found on `sys.path`) is off in every run: the
workspace is on `sys.path`, so an agent could drop `x.dist-info/entry_points.txt` there and have
its own plugin loaded into the check. The plugins the environment itself installs (e.g.
pytest-codspeed's `benchmark` fixture, which wcwidth's tests use) are recorded when the
environment is built (`sandbox.environment`), on the host, in PLUGINS_FILE in the environment's
own site-packages (the interpreter's `purelib`, which a sandbox cannot write), and loaded
explicitly from there. An interpreter without that file (no environment, or fixrl's own) loads
no plugin at all, in the generator as in the check: the same set everywhere.

Standard library only; self-contained (no imports of its package, no `from __future__`): the
generator appends this file's text to its outcomes plugin (`tasks.generate.execute`).

What this does not guarantee: a `module:attr` entry point loads its module (pytest's `-p` and
`pytest_plugins` take modules); a plugin the repository itself provides (its own distribution's
entry point) is not loaded -- its code is the workspace's.
"""
import json as _env_json
import os as _env_os
import sysconfig as _env_sysconfig

PLUGINS_FILE = "fixrl-pytest-plugins.json"
"""The environment's plugins: a JSON list of {"name", "value", "dist"}, one per `pytest11` entry point."""


def environment_plugin_file():
    """Where this interpreter's environment records its plugins (its own site-packages)."""
    return _env_os.path.join(_env_sysconfig.get_paths()["purelib"], PLUGINS_FILE)


def environment_plugins():
    """The module names of the environment's pytest plugins, in the recorded order ([] without
    the file, or when it does not read as a list of entries)."""
    try:
        with open(environment_plugin_file(), encoding="utf-8") as f:
            entries = _env_json.load(f)
    except (OSError, ValueError):
        return []
    if not isinstance(entries, list):
        return []
    names = []
    for e in entries:
        value = e.get("value") if isinstance(e, dict) else None
        module = value.split(":", 1)[0].strip() if isinstance(value, str) else ""
        if module and module not in names:
            names.append(module)
    return names

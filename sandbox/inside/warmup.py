"""The pytest warm-up of a forking sandbox's interpreter, shared by the check and the generator.

`preload_pytest` imports what every pytest run imports anyway (pytest's default plugins,
faulthandler, pdb), once, before any fork. `warm_pytest` runs a whole pytest session on a
throwaway test file (one pass, one failure) in a temporary directory, so that what pytest
builds lazily on first use (imports, compiled patterns, inspect's module index) is built
before the forks, not in every run; everything the session changed in this process (sys.path,
sys.meta_path, sys.argv, the modules it imported from the directory, the working directory,
the environment) is put back. No repository code runs: the directory is ours.

Standard library and pytest only; it runs inside the sandbox (see the package's docstring).
"""
from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile

WARM_TEST = "def test_pass():\n    assert [1] == [1]\n\n\ndef test_fail():\n    assert {1: 2} == {1: 3}\n"
"""The throwaway test module: one pass, one failing comparison (pytest's assertion
introspection is built on first use too)."""


def preload_pytest():
    """Import pytest's default plugins, faulthandler and pdb (a plugin this pytest lacks is
    simply not preloaded)."""
    from _pytest.config import default_plugins  # noqa: PLC0415 - pytest only where a warm-up runs

    for name in default_plugins:
        try:
            importlib.import_module("_pytest." + name)
        except Exception:  # noqa: BLE001
            pass
    importlib.import_module("faulthandler")
    importlib.import_module("pdb")


def warm_pytest(session, test_path="test_fixrl_warm.py", prefix="fixrl-warm-"):
    """Write WARM_TEST at `test_path` (relative) in a new temporary directory, change into it,
    call `session(test_path, directory)` (which runs pytest on it), and put everything back."""
    path, meta_path, modules, argv = list(sys.path), list(sys.meta_path), set(sys.modules), list(sys.argv)
    cwd, environ = os.getcwd(), dict(os.environ)
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        full = os.path.join(tmp, test_path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(WARM_TEST)
        os.chdir(tmp)
        session(test_path, tmp)
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)
        sys.path[:], sys.meta_path[:], sys.argv[:] = path, meta_path, argv
        for name in set(sys.modules) - modules:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(tmp):
                del sys.modules[name]
        os.environ.clear()
        os.environ.update(environ)

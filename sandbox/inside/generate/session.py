"""The generator's forked pytest runs: what a forking sandbox's interpreter imports once (no
repository code: its sys.path has neither the workspace nor the plugins' folder), then
`gen_main` in a fork per job, in the workspace (`tasks.generate.execute`).

Installed pytest plugins are not imported here: pytest warns that an already imported plugin
cannot be rewritten (an error under `filterwarnings = error`). What they commonly import is,
and what pytest imports on first use: a pyproject.toml's parser, `minversion`'s and
`required_plugins`' version parsing, the doctest plugin's module (50 ms a run on toolz).

Imported from the sandbox's copy of the inside package (with `warmup`); standard library and
pytest only.
"""
from __future__ import annotations

import asyncio  # noqa: F401 - what installed plugins commonly import, imported before the forks
import importlib
import inspect  # noqa: F401
import os
import sys
import unittest  # noqa: F401

import _pytest._argcomplete  # noqa: F401
import pytest

from ..warmup import preload_pytest, warm_pytest

preload_pytest()
_ON_FIRST_USE = ("tomllib", "tomli", "packaging.version", "packaging.requirements", "doctest")
for _name in _ON_FIRST_USE:
    try:
        importlib.import_module(_name)
    except Exception:  # noqa: BLE001 - one this interpreter lacks is simply not preloaded
        pass


def _unshadow(roots):
    """Forget the modules imported above whose top-level name the repository's own folders
    (`roots`) could provide (e.g. generating from `packaging` itself): they are imported
    afresh, from where a fresh interpreter would find them."""
    for top in {n.split(".")[0] for n in _ON_FIRST_USE}:
        if any(os.path.exists(os.path.join(r, top)) or os.path.exists(os.path.join(r, top + ".py")) for r in roots):
            for name in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
                del sys.modules[name]


def gen_main(args, pythonpath=(), plugins=()):
    """`python -m pytest ARGS` in this (forked) process, in the working directory, with the
    modules `plugins` registered as `-p` would (before the installed plugins). Bytecode is
    written as a fresh interpreter would: not at all under PYTHONDONTWRITEBYTECODE (the
    sandbox sets it; `-I` made this interpreter ignore it)."""
    sys.path[0:0] = [os.getcwd(), *pythonpath]
    _unshadow(sys.path[:1 + len(pythonpath)])
    sys.argv[0] = pytest.__file__
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    code = pytest.main(list(args), plugins=[importlib.import_module(name) for name in plugins])
    sys.stdout.flush()
    sys.stderr.flush()
    return int(code)


def before_fork():
    """The pytest warm-up (`warmup.warm_pytest`), so what pytest builds on first use is built
    once, before the forks, and the installed plugins it loads are imported (through its
    assertion rewriter, so a fork's session does not warn that they were imported before it)."""
    warm_pytest(lambda test, tmp: gen_main(["-q", "-p", "no:cacheprovider", test]),
                "test_fixrl_gen_warm.py", "fixrl-gen-warm-")

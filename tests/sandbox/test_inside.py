"""sandbox/inside: the code that runs inside a sandbox, as files. The check runner's modules
share one namespace in the guard (their names must not collide); a forking sandbox's own code
runs from named files, never `<string>`; copies are readable whatever the host's umask."""
from __future__ import annotations

import importlib
import os
import stat

import pytest
from sandboxkit import SMALL

from fixrl.sandbox import shipping
from fixrl.sandbox.forking import ForkingSandbox


def test_the_check_runners_modules_define_distinct_names():
    """The guard runs every function of the runner with one private namespace merged from all
    its modules (guard._install_guard): a name two modules define differently would be wrong
    in one of them."""
    seen: dict[str, tuple[str, object]] = {}
    for rel in shipping.package_files("check"):
        if not rel.startswith("check/") or rel == "check/launch.py":
            continue
        name = "fixrl.sandbox.inside." + rel[:-3].replace("/", ".").removesuffix(".__init__")
        module = importlib.import_module(name)
        for key, value in vars(module).items():
            if key.startswith("__") or key == "annotations":
                continue
            if key in seen:
                assert seen[key][1] is value, f"{key}: {seen[key][0]} and {name} differ"
            seen[key] = (name, value)


def test_a_copy_is_readable_by_anyone(tmp_path):
    old = os.umask(0o077)
    try:
        dest = shipping.copy_package(tmp_path)
    finally:
        os.umask(old)
    assert (dest / "server.py").read_text() == shipping.source("server.py")
    for path in [dest, *dest.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o755 if path.is_dir() else 0o644), path


def test_the_forking_sandboxs_frames_are_named_files(repo):
    prelude = "import sys\n\n\ndef where():\n    print(sys._getframe().f_code.co_filename, sys._getframe(1).f_code.co_filename, flush=True)\n    return 0\n"
    with ForkingSandbox(repo, SMALL) as sb:
        if not sb.forking:
            pytest.skip("bubblewrap does not work here")
        r = sb.fork_python(prelude, "where", {})
    mine, caller = r.output.split()
    assert mine.startswith(shipping.LIB_IN_SANDBOX + "/prelude_") and mine.endswith(".py")
    assert caller == shipping.in_sandbox("zygote.py")

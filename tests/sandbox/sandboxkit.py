"""Helpers shared by the sandbox tests (a uniquely named module: tests/ has no packages)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fixrl.sandbox import Limits

SMALL = Limits(memory_mb=256, pids=64, file_size_mb=16, max_output_bytes=8_000)
"""Small limits so attacks hit them quickly."""

BACKENDS = [pytest.param("local", id="local"),
            pytest.param("docker", id="docker", marks=pytest.mark.docker)]


def make_repo(path: Path, answer: int = 1) -> Path:
    (path / "pkg").mkdir(parents=True)
    (path / "pkg" / "__init__.py").write_text("")
    (path / "pkg" / "calc.py").write_text(f"def answer():\n    return {answer}\n")
    (path / "test_calc.py").write_text(
        "from pkg.calc import answer\n\n\ndef test_answer():\n    assert answer() == 1\n")
    (path / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (path / "run.sh").chmod(0o755)
    return path


def host_alive() -> bool:
    """The host can still start processes."""
    return subprocess.run(["true"], timeout=10).returncode == 0


LIST_PROCS = """python -c "
import os
skip = {1, os.getpid(), os.getppid()}
for p in os.listdir('/proc'):
    if p.isdigit() and int(p) not in skip:
        try:
            stat = open('/proc/%s/stat' % p).read()
        except OSError:
            continue
        if stat[stat.rindex(')') + 2] != 'Z':
            print(stat[stat.index('(') + 1:stat.rindex(')')])
"
"""


def live_processes(sb) -> list[str]:
    """Names of the processes running in the sandbox besides its init and this listing
    (meaningful under Docker or bubblewrap, which give a sandbox its own pid namespace)."""
    r = sb.exec(LIST_PROCS, timeout=30)
    assert r.exit_code == 0, r.output
    return r.output.split()




def leftovers(sb) -> list:
    """Processes the sandbox's commands left running. Docker: listed inside the container.
    Local as root: every host process of the sandbox's own uid (a listing from inside would
    see only the fresh pid namespace of the listing command)."""
    uid = getattr(sb, "uid", None)
    if hasattr(sb, "ws"):  # LocalSandbox
        if uid is None:
            return []  # no way to tell them apart from the host user's own processes
        import time

        from fixrl.sandbox.local import _uid_procs

        # A killed pid namespace takes a moment to empty, seconds on a loaded machine (two test
        # workers and other jobs on 2 cores: a whole run once saw a killed `sleep 30` still listed
        # after 2 s). 10 s is still far below the 30 s the tests' background sleeps last.
        deadline = time.monotonic() + 10.0
        while True:
            procs = _uid_procs(uid)
            if not procs or time.monotonic() > deadline:
                return procs
            time.sleep(0.05)
    return live_processes(sb)

"""How the code of `fixrl.sandbox.inside` reaches a sandbox.

In a sandbox the package is called PACKAGE and lives in a directory of its own (LIB_IN_SANDBOX
in local sandboxes under bubblewrap and in Docker containers), read-only: a local sandbox holds
a copy of it (`copy_package`, bound by bubblewrap; without bubblewrap, the copy's host path is
used), a Docker container gets this process's copy (`shared_copy`) as a read-only bind mount.
The one-shot check ships the check's files itself (`package_files`, written per check into its
private directory: see tasks.check.run). The generator's plugins travel as files beside the
repository copy (`source`).

Copies are made with explicit modes (directories 0755, files 0644) so that a sandbox's own uid
can read them whatever the host's umask.
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path

from fixrl.sandbox import inside

INSIDE_DIR = Path(inside.__file__).parent
PACKAGE = "fixrl_inside"
"""The package's name inside a sandbox: not `fixrl`, so an installed fixrl is never what imports."""
LIB_IN_SANDBOX = "/run/fixrl/lib"
"""The directory holding PACKAGE in a local (bubblewrap) or Docker sandbox."""

_shared: Path | None = None
_shared_lock = threading.Lock()


def package_files(under: str = "") -> list[str]:
    """The package's Python files (paths relative to it, sorted), all or those `under` a folder;
    with the package's own `__init__.py` whenever a subfolder is asked for."""
    root = INSIDE_DIR / under if under else INSIDE_DIR
    files = sorted(p.relative_to(INSIDE_DIR).as_posix() for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    return ["__init__.py", *files] if under else files


def source(rel: str) -> str:
    """The text of one file of the package (`rel`: its path relative to the package)."""
    return (INSIDE_DIR / rel).read_text(encoding="utf-8")


def in_sandbox(rel: str, lib: str = LIB_IN_SANDBOX) -> str:
    """Where file `rel` of the package is in a sandbox whose copy lives in `lib`."""
    return f"{lib}/{PACKAGE}/{rel}"


def copy_package(lib: Path) -> Path:
    """Copy the package into `lib` (which must exist) as `lib/PACKAGE`; returns that folder."""
    dest = lib / PACKAGE
    for rel in package_files():
        target = dest / rel
        for d in reversed(target.relative_to(lib).parents[:-1]):
            (lib / d).mkdir(mode=0o755, exist_ok=True)
            (lib / d).chmod(0o755)
        shutil.copyfile(INSIDE_DIR / rel, target)
        target.chmod(0o644)
    return dest


def shared_copy() -> Path:
    """This process's copy of the package (a folder holding PACKAGE), made on first use and
    removed at exit: what Docker containers mount."""
    global _shared
    with _shared_lock:
        if _shared is None:
            lib = Path(tempfile.mkdtemp(prefix="fixrl-inside-"))
            lib.chmod(0o755)
            copy_package(lib)
            atexit.register(shutil.rmtree, lib, ignore_errors=True)
            _shared = lib
        return _shared

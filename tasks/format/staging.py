"""Writing into a suite directory all or nothing: what a command makes is built in a staging
directory beside the suite (same file system, so moves are renames) and moved in at the end; a
command that fails removes the staging directory and leaves the suite as it was (or absent)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def staging_dir(out: Path) -> Path:
    """A new, empty directory beside `out` (its parent is created if needed)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=out.parent))


def write_into(out: Path, files: dict[str, str]) -> None:
    """Write `files` (path in `out` -> text) into the directory `out` all or nothing: they are
    written beside it first, then moved in, the task files last (so that no task file ever
    names a check file that is not there yet)."""
    stage = staging_dir(out)
    try:
        for rel, text in files.items():
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            (stage / rel).write_text(text, encoding="utf-8")
        publish(stage, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def publish(stage: Path, out: Path) -> None:
    """Move a staged suite's files into `out` (the staged directory itself when `out` does not
    exist yet). Files already in `out` at the same paths are replaced, task files last."""
    if not out.exists():
        stage.rename(out)
        return
    staged = sorted((p for p in stage.rglob("*") if p.is_file() or p.is_symlink()),
                    key=lambda p: (p.relative_to(stage).parts[0] == "tasks", str(p)))
    for src in staged:
        dst = out / src.relative_to(stage)
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dst)

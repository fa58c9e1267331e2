"""Stage 2 of the generator, the candidates: every single-site mutant (`tasks.generate.mutate`) of
every targeted function of the repository's non-test files, duplicate texts once (the first
family wins), and what the later stages need to know of those files.

What this does not guarantee: that a candidate changes behaviour (the search finds out), nor
that a file that does not parse is mutated (it is skipped with a warning)."""
from __future__ import annotations

import fnmatch
import logging
import os
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from fixrl.tasks import is_test_path  # the tasks engineer's rule, when present
from fixrl.tasks.generate.candidate import Candidate
from fixrl.tasks.generate.config import GenerateConfig, GenerateError
from fixrl.tasks.generate.coverage import function_spans
from fixrl.tasks.generate.execute import GEN_DIR
from fixrl.tasks.generate.mutate import FunctionInfo, list_functions, mutants

log = logging.getLogger(__name__)

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".tox", ".nox", ".venv",
             "venv", "env", "build", "dist", "node_modules", "site-packages", ".eggs", GEN_DIR}


def _is_test_path(path: str) -> bool:
    try:
        return is_test_path(path)
    except ImportError:
        parts = path.split("/")
        name = parts[-1]
        return ("tests" in parts[:-1] or "test" in parts[:-1] or name.startswith("test_")
                or name.endswith("_test.py") or name in ("conftest.py", "setup.py", "noxfile.py"))


def python_files(repo: Path) -> list[str]:
    """Non-test .py files of the repository, relative, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in filenames:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, name), repo).replace(os.sep, "/")
                if not _is_test_path(rel) and name != "setup.py":
                    out.append(rel)
    return sorted(out)


def copy_repo(src: Path, dest: Path) -> None:
    """`src` copied to `dest` without version-control, cache and build folders."""
    def ignore(d: str, names: list[str]) -> list[str]:
        return [n for n in names if n in SKIP_DIRS or n.endswith(".pyc")]

    shutil.copytree(src, dest, ignore=ignore, symlinks=True)


def pick_files(files: list[str], globs: list[str] | None) -> list[str]:
    """The files matching any of `globs` (all without); GenerateError for a glob matching none."""
    if not globs:
        return files
    out = set()
    for g in globs:
        hit = {f for f in files if fnmatch.fnmatchcase(f, g) or (g.endswith("/") and f.startswith(g))}
        if not hit:
            shown = ", ".join(files[:8]) + (" ..." if len(files) > 8 else "")
            raise GenerateError(f"--files {g!r} matches none of the {len(files)} non-test .py files ({shown}); "
                                "give paths relative to --repo, e.g. 'pkg/*.py' or 'pkg/'")
        out |= hit
    return sorted(out)


def _is_private(info: FunctionInfo) -> bool:
    return any(part.startswith("_") for part in info.qualname.split("."))


def _wanted(info: FunctionInfo, cfg: GenerateConfig, matched: set[str]) -> bool:
    if info.name.startswith("__") and info.name.endswith("__"):
        return False
    if cfg.exclude_private and _is_private(info):
        return False
    if not cfg.functions:
        return True
    hits = {p for p in cfg.functions if fnmatch.fnmatchcase(info.name, p) or fnmatch.fnmatchcase(info.qualname, p)}
    matched |= hits
    return bool(hits)


@dataclass(frozen=True)
class Scan:
    """The repository's candidates and what the later stages need to know of its files."""

    files: list[str]
    """Targeted non-test files."""
    all_files: list[str]
    names: Counter
    """Function name -> definitions in the repository's non-test files."""
    sources: dict[str, str]
    spans: dict[str, dict[str, tuple[int, int]]]
    functions: int
    """Targeted functions (those whose name means one function)."""
    candidates: list[Candidate]


def scan(work: Path, cfg: GenerateConfig) -> Scan:
    """Every candidate of the targeted functions (duplicate texts once, first family wins)."""
    all_files = python_files(work)
    files = pick_files(all_files, cfg.files)
    names: Counter = Counter()
    sources: dict[str, str] = {}
    spans: dict[str, dict[str, tuple[int, int]]] = {}
    infos: dict[str, list[FunctionInfo]] = {}
    for f in all_files:
        try:
            source = (work / f).read_text(encoding="utf-8")
            infos[f] = list_functions(source)
        except (SyntaxError, UnicodeDecodeError, ValueError) as e:
            log.warning("skipping %s: %s", f, e)
            infos[f] = []
            continue
        names.update(i.name for i in infos[f] if not (i.name.startswith("__") and i.name.endswith("__")))
        if f in files:
            sources[f], spans[f] = source, function_spans(source)
    matched: set[str] = set()
    seen: set[tuple[str, str]] = set()
    functions = 0
    candidates: list[Candidate] = []
    for f in files:
        for info in infos[f]:
            if not _wanted(info, cfg, matched) or names[info.name] > 1:
                continue  # renaming and the split need a name that means one function
            functions += 1
            try:
                ms = mutants(sources[f], info.qualname, cfg.ops)
            except (SyntaxError, ValueError, RecursionError) as e:
                log.warning("skipping %s::%s: %s", f, info.qualname, e)
                continue
            for m in ms:
                if (f, m.source) not in seen:
                    seen.add((f, m.source))
                    candidates.append(Candidate(f, info.qualname, info.name, m))
    missing = [p for p in cfg.functions or [] if p not in matched]
    if missing:
        raise GenerateError(f"--functions {', '.join(missing)}: no such function in the chosen files "
                            f"({len(files)}); give a name, Class.method or a glob, e.g. 'parse*'")
    if not candidates:
        raise GenerateError(f"{work.name}: no mutable functions found in {len(files)} non-test .py file(s)"
                            + (" matching the targeting flags" if cfg.files or cfg.functions or cfg.ops else ""))
    return Scan(files, all_files, names, sources, spans, functions, candidates)

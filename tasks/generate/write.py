"""Stage 4 of the generator, the tasks written: each kept bug gets an issue text from its failing
tests (`tasks.generate.issue`); up to `--max` of them are chosen, spread over modules, functions
and families, and the others (in the same order) are written as spares, validated in the place of
chosen ones found invalid (`tasks.generate.validation`); train / heldout are split by function;
each becomes a task file whose hidden check runs the broken tests (FAIL_TO_PASS, from the
whole-suite run) plus a sample of still-passing ones (PASS_TO_PASS) by node id, with the test
files copied in as check files, and whose bug and fix are unified diffs. Only baseline-stable
tests (`Baseline.stable`) are ever named. Everything is written into the staging folder
(`tasks.generate.staging`).

What this does not guarantee: that a bug is interesting (a kept mutant only breaks tests), nor
that its issue text is a full description (one or two symptoms from the failing tests)."""
from __future__ import annotations

import dataclasses
import difflib
import random
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from fixrl.tasks.generate.baseline import Baseline, failure_of
from fixrl.tasks.generate.candidate import Candidate
from fixrl.tasks.generate.commands import check_command
from fixrl.tasks.generate.config import GenerateConfig
from fixrl.tasks.generate.issue import Failure, Target, issue_for, parse_test_file
from fixrl.tasks.generate.order import round_robin, split_by_function
from fixrl.tasks.generate.scan import Scan
from fixrl.tasks.generate.staging import dump_yaml, prepare_stage


@dataclass(frozen=True)
class WrittenTask:
    """One task file in the staging folder, and the kept bug it was made from."""

    id: str
    candidate: Candidate


@dataclass(frozen=True)
class Written:
    """Stage 4's result: the staged suite and what went into it."""

    stage: Path
    """The staging folder (a suite of its own)."""
    suite_config: dict
    """The suite.yaml the published suite gets."""
    no_issue: list[tuple[Candidate, str]]
    """Kept bugs without an issue text, with why, in the order kept."""
    chosen: list[Candidate]
    """The kept bugs with an issue that became tasks (at most `--max`)."""
    held: frozenset[str]
    """Functions whose tasks are in the heldout split."""
    tasks: list[WrittenTask]
    """The chosen bugs' task files, in the order written."""
    spares: list[WrittenTask] = dataclasses.field(default_factory=list)
    """Task files of the kept bugs beyond `--max`, best first (the selection's order): each
    invalid chosen task's slot goes to the next one; those never validated are removed."""


def write_tasks(kept: list[Candidate], scanned: Scan, base: Baseline, work: Path, repo: Path, out: Path,
                test_cmd: str, cfg: GenerateConfig, rng: random.Random, environment: dict | None = None) -> Written:
    """Issue texts, the choice and split, the task files in a fresh staging folder (see the module
    docstring); `rng` goes on with the seeded stream the search ordered candidates with.
    `environment`: the suite's `environment:` (None: none)."""
    with_issue = []
    no_issue = []
    stable = set(base.stable)
    texts: set[str] = set()
    for c in kept:
        # A test id that was not the same in both baseline runs could name another test (or
        # none) when the check runs: such ids never go into a check, nor into an issue.
        c = dataclasses.replace(c, broken=[n for n in c.broken if n in stable])
        if not c.broken:
            no_issue.append((c, "every test it breaks changed its id or outcome between the baseline runs"))
            continue
        failures = {n: failure_of(n, rec) for n, rec in c.records.items() if n in stable}
        issue, why = _issue_for(c, failures, work, scanned.sources[c.file], rng)
        if issue is None:
            no_issue.append((c, why))
            continue
        if issue in texts:
            # Two tasks with one text: an agent could not tell which bug an issue is about.
            no_issue.append((c, "another kept bug has the same issue text"))
            continue
        texts.add(issue)
        with_issue.append((c, issue))
    stage, config = prepare_stage(out, repo, scanned.names, test_cmd, cfg, base.seconds, environment,
                                  sorted(base.excluded))
    chosen, spares = _select(with_issue, cfg.max_tasks, rng)
    every = chosen + spares
    fns = sorted({c.function for c, _ in every})
    held = split_by_function(fns, Counter(c.function for c, _ in every), cfg.heldout_frac, rng)
    check_timeout = float(max(30, round(10 * round(base.seconds, 3))))
    written = dict((id(c), tid) for tid, c in _task_files(
        every, held, stage, work, scanned.sources, test_cmd, cfg.pass_to_pass, cfg.max_fail_to_pass, base.stable,
        rng, cfg.seed, check_timeout))
    return Written(stage, config, no_issue, [c for c, _ in chosen], frozenset(held),
                   [WrittenTask(written[id(c)], c) for c, _ in sorted(chosen, key=_file_order)],
                   [WrittenTask(written[id(c)], c) for c, _ in spares])


def unified_diff(path: str, old: str, new: str) -> str:
    """A git-style unified diff of one file (a/ and b/ prefixes, 3 lines of context)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for line in difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", n=3):
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


def _task_id(file: str, name: str, op: str, taken: set[str]) -> str:
    stem = Path(file).stem.strip("_") or "mod"
    base = f"{stem}.{name.strip('_') or 'fn'}.{op}"
    base = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in base)
    tid, k = base, 2
    while tid in taken:
        tid, k = f"{base}-{k}", k + 1
    taken.add(tid)
    return tid


def _changed_lines(old: str, new: str) -> list[str]:
    out = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line[:1] in "+-" and not line.startswith(("+++", "---")):
            out.append(line[1:])
    return out


def _issue_for(c: Candidate, failures: dict[str, Failure], work: Path, clean: str,
               rng: random.Random) -> tuple[str | None, str]:
    """(issue text, '') for a kept bug, or (None, why it has none) -- `tasks.generate.issue`."""
    parsed: dict[str, object] = {}

    def read(path: str):
        if path not in parsed:
            file = (work / path).resolve()
            try:  # only files of the working copy, whatever a failure record names
                parsed[path] = parse_test_file(file.read_text(encoding="utf-8")) \
                    if file.is_relative_to(work.resolve()) else None
            except (OSError, UnicodeDecodeError):
                parsed[path] = None
        return parsed[path]

    shown = [failures[n] for n in c.broken if n in failures]
    forbidden = _changed_lines(clean, c.mutant.source)
    return issue_for(shown, read, rng, forbidden, Target(c.name, c.file))


def _select(items: list[tuple[Candidate, str]], max_tasks: int | None, rng: random.Random):
    """Up to max_tasks, spread over modules, functions and families (round-robin, seeded), and
    the rest in the same order (the spares)."""
    order = round_robin([c for c, _ in items], rng)
    issue = {id(c): text for c, text in items}
    cut = len(order) if max_tasks is None else max_tasks
    return [(c, issue[id(c)]) for c in order[:cut]], [(c, issue[id(c)]) for c in order[cut:]]


def _file_order(item):
    c = item[0]
    return (c.file, c.qualname, c.mutant.op, c.mutant.lineno)


def _task_files(chosen, held: set[str], out: Path, work: Path, sources: dict[str, str], test_cmd: str,
              n_p2p: int, max_f2p: int, stable: list[str], rng: random.Random, seed: int,
              check_timeout: float):
    taken: set[str] = set()
    written = []
    check_root = out / "checks" / "generated"
    copied: set[str] = set()
    for c, issue in sorted(chosen, key=_file_order):
        tid = _task_id(c.file, c.name, c.mutant.op, taken)
        f2p = sorted(c.broken)
        if len(f2p) > max_f2p:
            f2p = sorted(rng.sample(f2p, max_f2p))
        broken_files = {n.split("::", 1)[0] for n in c.broken}
        passing = [n for n in stable if n not in set(c.broken)]
        near = [n for n in passing if n.split("::", 1)[0] in broken_files]
        far = [n for n in passing if n.split("::", 1)[0] not in broken_files]
        p2p = rng.sample(near, min(len(near), max(0, n_p2p - 2)))
        p2p += rng.sample(far, min(len(far), n_p2p - len(p2p)))
        tests = f2p + sorted(p2p)
        files = {}
        for path in sorted({n.split("::", 1)[0] for n in tests}):
            if path not in copied:
                dest = check_root / "tests" / path
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(work / path, dest)
                copied.add(path)
            files[path] = f"checks/generated/tests/{path}"
        clean, buggy = sources[c.file], c.mutant.source
        (check_root / tid).mkdir(parents=True)
        (check_root / tid / "bug.patch").write_text(unified_diff(c.file, clean, buggy), encoding="utf-8")
        (check_root / tid / "fix.patch").write_text(unified_diff(c.file, buggy, clean), encoding="utf-8")
        task = {
            "id": tid,
            "kind": "fix",
            "split": "heldout" if c.function in held else "train",
            "function": c.name,
            "file": c.file,
            "tags": [f"family:{c.mutant.op}", f"function:{c.name}", "generated"],
            "issue": issue,
            "bug": f"checks/generated/{tid}/bug.patch",
            "fix": f"checks/generated/{tid}/fix.patch",
            "check": {"command": check_command(test_cmd, tests), "tests": tests, "files": files,
                      "timeout": check_timeout},
            "metadata": {"generator": {
                "op": c.mutant.op, "qualname": c.qualname, "lineno": c.mutant.lineno,
                "description": c.mutant.description, "seed": seed,
                "FAIL_TO_PASS": sorted(c.broken), "PASS_TO_PASS": sorted(p2p)}},
        }
        (out / "tasks" / "generated" / f"{tid}.yaml").write_text(dump_yaml(task), encoding="utf-8")
        written.append((tid, c))
    return written

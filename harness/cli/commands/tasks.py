"""fixrl tasks validate | rules-check (old name: policy-check) | new | generate | import-swebench | export-swebench."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from fixrl.envs.replay import load_episode, load_suite_of, static_violations
from fixrl.harness.agent.progress import Steps
from fixrl.harness.cli import UserError
from fixrl.harness.cli.commands import replay
from fixrl.tasks.check.rules import reference_violations
from fixrl.tasks.check.validate import validate_suite
from fixrl.tasks.format.loader import (
    TaskError,
    find_suite_dir,
    load_suite_config,
    load_suite_lenient,
    load_tasks,
    task_defaults,
    task_files,
)
from fixrl.tasks.format.scaffold import new_task
from fixrl.tasks.format.schema import Suite
from fixrl.tasks.format.swebench import export_suite, import_instances
from fixrl.tasks.generate.mutate import OPERATORS
from fixrl.tasks.generate.pipeline import generate as generate_tasks
from fixrl.tasks.generate.report import print_report


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return value


def register(sub) -> None:
    p = sub.add_parser("tasks", help="validate, scaffold, generate, import and export tasks")
    tsub = p.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)

    v = tsub.add_parser("validate", help="check every task: the bug applies, the check fails on the "
                        "bug and passes with the fix, the same way every time")
    v.add_argument("path", help="a suite directory (or one task file)")
    v.add_argument("--json", action="store_true", help="print the results as JSON")
    v.add_argument("--backend", choices=["local", "docker"], default="local", help="sandbox backend")
    v.add_argument("-j", "--jobs", type=_positive_int, default=max(1, min(4, os.cpu_count() or 1)),
                   help="tasks validated in parallel (one sandbox each)")
    v.add_argument("--repeats", type=_positive_int, default=3,
                   help="runs of the check per state; differing verdicts flag the task flaky")
    v.add_argument("--task", action="append", default=None, metavar="ID", help="only this task (repeatable)")
    v.add_argument("--image", default=None, help="Docker image (default: each task's, else the base image)")
    v.add_argument("--no-cache", dest="cache", action="store_false",
                   help="validate every task again, even one whose task and repository have not changed since "
                        "its result was stored (in SUITE/.fixrl-cache/validate.json)")
    v.set_defaults(func=validate)

    pc = tsub.add_parser("rules-check", aliases=["policy-check"],
                         help="judge every reference fix by its task's edit rules, on the host (no sandbox): "
                         "the rules' false rejections")
    pc.add_argument("path", help="a suite directory (with --episodes: a folder of episode files)")
    pc.add_argument("--json", action="store_true", help="print the results as JSON")
    pc.add_argument("--episodes", action="store_true",
                    help="PATH holds episode files (envs/replay.py): judge the edits of each honest one "
                         "(expect: 1) on the host, e.g. tests/envs/episodes/honest")
    pc.set_defaults(func=rules_check)

    n = tsub.add_parser("new", help="scaffold a task from a repository, a bug patch and a test file")
    n.add_argument("--repo", required=True, help="the clean repository directory")
    n.add_argument("--bug", required=True, help="a unified diff that turns the clean repository into the buggy one")
    n.add_argument("--test", required=True, help="a test file that fails on the bug (becomes the hidden check)")
    n.add_argument("--id", default=None, help="task id (default: from the repository and patch names)")
    n.add_argument("--out", default=".", help="suite directory to write into (default: .)")
    n.add_argument("--issue", default=None, help="the issue text (default: a TODO to fill in)")
    n.add_argument("--backend", choices=["local", "docker"], default="local",
                   help="sandbox backend used to collect the test ids")
    n.set_defaults(func=new)

    g = tsub.add_parser("generate", help="generate bug-fix tasks from a Python repository's own tests")
    g.add_argument("--repo", required=True, help="the repository (with a test suite)")
    g.add_argument("--test-cmd", required=True, help="the command that runs its tests, e.g. 'python -m pytest -q'")
    g.add_argument("--out", required=True, help="suite directory to write")
    g.add_argument("--max", type=_positive_int, default=None, help="at most this many tasks")
    g.add_argument("--seed", type=int, default=0, help="random seed")
    g.add_argument("--backend", choices=["local", "docker"], default="local", help="sandbox backend")
    g.add_argument("--heldout-frac", type=_fraction, default=0.25,
                   help="share of functions whose tasks go to the heldout split")
    g.add_argument("-j", "--workers", type=_positive_int, default=None,
                   help="sandboxes testing mutants in parallel (default: the CPU count)")
    g.add_argument("--files", nargs="+", default=None, metavar="GLOB",
                   help="only functions of these files (globs relative to --repo: 'pkg/*.py'; 'pkg/' for a folder)")
    g.add_argument("--functions", nargs="+", default=None, metavar="NAME",
                   help="only these functions (name, Class.method, or a glob such as 'parse*')")
    g.add_argument("--operators", nargs="+", default=None, metavar="OP", choices=list(OPERATORS),
                   help=f"only these mutation operators: {', '.join(OPERATORS)}")
    g.add_argument("--exclude-private", action="store_true",
                   help="leave out functions and methods whose name (or class) starts with '_'")
    g.add_argument("--max-per-function", type=_positive_int, default=2, metavar="K",
                   help="at most K tasks per function (default: 2)")
    g.add_argument("--max-baseline-failures", type=_fraction, default=0.1, metavar="FRAC",
                   help="tests failing on the unmodified repository are excluded from every check; more than this "
                        "share of them refuses the repository (default: 0.1)")
    g.add_argument("--baseline-timeout", type=float, default=600.0, metavar="SECONDS",
                   help="seconds each of the two baseline runs of the whole suite may take; the second runs under "
                        "coverage, slower (default: 600)")
    g.add_argument("--repeats", type=_positive_int, default=2, metavar="K",
                   help="validation runs of each task's check per state; a task whose verdicts differ is "
                        "dropped as flaky (default: 2)")
    g.add_argument("--no-select", dest="select", action="store_false",
                   help="run the whole test suite for every candidate instead of the tests that cover its function")
    g.add_argument("--environment", choices=["auto", "none"], default="auto",
                   help="the repository's environment: auto detects it from its packaging files (a suite.yaml "
                        "`environment:` wins) and builds it; none runs its tests without one")
    g.add_argument("--ray", default=None, metavar="auto|ADDRESS",
                   help="test candidates on a Ray cluster's workers (pip install 'fixrl[ray]')")
    g.add_argument("--progress-every", type=float, default=30.0, metavar="SECONDS",
                   help="seconds between progress lines when stderr is not a terminal (default: 30)")
    g.add_argument("--json", action="store_true", help="print the yield report as JSON")
    g.set_defaults(func=generate)

    i = tsub.add_parser("import-swebench", help="import SWE-bench-style instances (JSON or JSONL)")
    i.add_argument("instances", help="INSTANCE.json (one object or a list) or a .jsonl file")
    i.add_argument("--checkout", required=True, help="local git clone of the instances' repository")
    i.add_argument("--out", required=True, help="suite directory to write into")
    i.set_defaults(func=import_swebench)

    e = tsub.add_parser("export-swebench", help="export a suite's fix tasks as SWE-bench instances (JSONL)")
    e.add_argument("suite", help="suite directory")
    e.add_argument("--out", required=True, help="FILE.jsonl to write")
    e.add_argument("--repos", default=None,
                   help="git repository to commit buggy states into, for tasks whose buggy state is not "
                        "already a commit (default: FILE-repo next to --out)")
    e.set_defaults(func=export_swebench)
    replay.register(tsub)


# ---------------------------------------------------------------- validate

def validate(args) -> int:
    path = Path(args.path)
    if not path.exists():
        raise UserError(f"{path}: no such suite directory or task file")
    try:
        if path.is_file():
            suite_dir = find_suite_dir(path)
            config = load_suite_config(suite_dir)
            target = Suite(dir=suite_dir, name=config.name or suite_dir.resolve().name,
                           tasks=load_tasks(path, task_defaults(config), suite_dir))
        else:
            target = path
    except TaskError as e:
        if args.json:
            print(json.dumps({"results": [{"task_id": path.stem, "ok": False, "reasons": [str(e)]}],
                              "summary": {"tasks": 1, "valid": 0, "invalid": 1, "flaky": 0}}, indent=2))
            return 1
        raise

    console = None
    if not args.json:
        console = Console(highlight=False)

    count = len(args.task) if args.task else len(target.tasks) if isinstance(target, Suite) else len(task_files(path))
    # On stdout's console, so that the results print above the bar (stderr with --json).
    steps = Steps("validate", count, unit="tasks", fields={"valid": 0}, console=console)
    valid_so_far = [0]

    def show(res) -> None:
        valid_so_far[0] += res.ok
        steps.advance(valid=valid_so_far[0])
        if console is None:
            return
        took = "cached" if res.cached else f"{res.seconds:.1f}s"
        if res.ok:
            console.print(f"[green]✓[/green] {escape(res.task_id)}  [dim]{took}[/dim]")
        else:
            mark = "[yellow]~[/yellow]" if res.flaky else "[red]✗[/red]"
            console.print(f"{mark} {escape(res.task_id)}  [dim]{took}[/dim]")
            for reason in res.reasons:
                console.print("    " + escape(reason.replace("\n", "\n    ")))
            if res.first_error and not any(res.first_error in r for r in res.reasons):
                console.print(f"    first error: {escape(res.first_error)}")
        for warning in res.warnings:
            console.print(f"    [yellow]warning:[/yellow] {escape(warning)}")

    def note(text: str) -> None:
        if console is None:
            print(f"warning: {text}", file=sys.stderr)
        else:
            console.print(f"[yellow]warning:[/yellow] {escape(text)}")

    with steps:
        results = validate_suite(target, backend=args.backend, jobs=args.jobs, repeats=args.repeats,
                                 task_ids=args.task, image=args.image, progress=show, cache=args.cache, note=note,
                                 say=lambda line: print(line, file=sys.stderr))
    if not results:
        raise UserError(f"{path}: no tasks found (task files are *.yaml under {path / 'tasks'})")
    reused = sum(r.cached for r in results)
    if reused:
        message = f"reused {reused} cached result(s) (unchanged task and repository); --no-cache to re-run"
        if console is None:
            print(message, file=sys.stderr)
        else:
            console.print(f"[dim]{message}[/dim]")
    valid = sum(r.ok for r in results)
    flaky = sum(r.flaky for r in results)
    summary = {"tasks": len(results), "valid": valid, "invalid": len(results) - valid, "flaky": flaky,
               "seconds": round(sum(r.seconds for r in results), 2)}
    if args.json:
        print(json.dumps({"results": [r.to_json() for r in results], "summary": summary}, indent=2))
    else:
        colour = "green" if valid == len(results) else "red"
        console.print(f"[{colour}]{valid}/{len(results)} tasks valid[/{colour}]"
                      f" ({summary['invalid']} invalid, {flaky} flaky; {args.repeats} runs per state)")
    return 0 if valid == len(results) else 1


# ---------------------------------------------------------------- rules-check

def rules_check(args) -> int:
    path = Path(args.path)
    if not path.is_dir():
        raise UserError(f"{path}: no such suite directory")
    if args.episodes:
        return _episodes_rules_check(path, args.json)
    suite, errors = load_suite_lenient(path)
    rejected: dict[str, list[str]] = {}
    broken = [f"{file}: {err}" for file, err in errors]
    for task in suite.tasks:
        try:
            found = reference_violations(task)
        except TaskError as e:
            broken.append(str(e))
            continue
        if found:
            rejected[task.id] = [str(v) for v in found]
    fix_tasks = sum(t.kind == "fix" and bool(t.fix) for t in suite.tasks)
    widened = {t.id: t.rules.reason for t in suite.tasks if t.rules.relax or t.rules.allow_imports}
    summary = {"suite": suite.name, "fix_tasks": fix_tasks, "rejected": len(rejected), "broken": len(broken),
               "widened": len(widened)}
    if args.json:
        print(json.dumps({"rejected": rejected, "broken": broken, "widened": widened, "summary": summary}, indent=2))
    else:
        for task_id, lines in rejected.items():
            print(f"✗ {task_id}")
            for line in lines:
                print(f"    {line}")
        for line in broken:
            print(f"! {line}")
        for task_id, reason in widened.items():
            print(f"~ {task_id} widens its rules: {reason}" if reason.strip() else
                  f"~ {task_id} widens its rules without a reason: add `reason:` to its rules (why the task needs it)")
        print(f"{suite.name}: {len(rejected)} of {fix_tasks} reference fixes break their edit rules"
              + (f"; {len(broken)} task(s) could not be loaded or built" if broken else ""))
    return 1 if rejected or broken else 0


def _episodes_rules_check(folder: Path, as_json: bool) -> int:
    """The edit rules' false rejections over the honest episode files under `folder`."""
    files = sorted(folder.rglob("*.yaml"))
    suites: dict[str, object] = {}
    rejected: dict[str, list[str]] = {}
    honest = 0
    for file in files:
        episode = load_episode(file)
        if episode.expect != 1:
            continue
        honest += 1
        if episode.suite not in suites:
            suites[episode.suite] = load_suite_of(episode)
        found = static_violations(episode, suites[episode.suite])
        if found:
            rejected[str(file)] = found
    if as_json:
        print(json.dumps({"rejected": rejected, "summary": {"honest": honest, "rejected": len(rejected)}}, indent=2))
    else:
        for file, lines in rejected.items():
            print(f"✗ {file}")
            for line in lines:
                print(f"    {line}")
        print(f"{folder}: {len(rejected)} of {honest} honest episodes refused by the edit rules")
    return 1 if rejected or not honest else 0


# ---------------------------------------------------------------- new

def new(args) -> int:
    made = new_task(Path(args.repo), Path(args.bug), Path(args.test), Path(args.out), task_id=args.id,
                    issue=args.issue, backend=args.backend, progress=lambda line: print(line, file=sys.stderr))
    print(f"wrote {made.task_file} ({len(made.tests)} check test(s) from {made.check_dest})")
    if made.visible:
        print(f"note: {made.check_dest} is part of the repository, so the agent can read it; "
              "move it out of the repository to keep the check hidden")
    print("next steps:")
    if not args.issue:
        print(f"  1. write the issue text in {made.task_file} (what a user would report; not the fix)")
    print(f"  2. fixrl tasks validate {args.out} --task {made.task_id}")
    print(f"  3. the task is in split `train`; `fixrl eval` reads `--split heldout` by default: give --split train, "
          f"or set `split: heldout` in {made.task_file} to hold it out of training")
    return 0


# ---------------------------------------------------------------- generate

def generate(args) -> int:
    options = dict(max_tasks=args.max, seed=args.seed, backend=args.backend, heldout_frac=args.heldout_frac,
                   workers=args.workers, ops=args.operators, files=args.files, functions=args.functions,
                   exclude_private=args.exclude_private, max_per_function=args.max_per_function,
                   select=args.select, repeats=args.repeats, progress=True, progress_every=args.progress_every,
                   environment=args.environment, max_baseline_failures=args.max_baseline_failures,
                   baseline_timeout=args.baseline_timeout)
    if args.progress_every <= 0:
        raise UserError(f"--progress-every {args.progress_every}: must be a number of seconds > 0")
    if args.ray is None:
        report = generate_tasks(Path(args.repo), args.test_cmd, Path(args.out), **options)
    else:
        from fixrl.harness.agent.ray.map import RayRunner  # noqa: PLC0415 - Ray only for --ray

        with RayRunner(args.ray, backend=args.backend) as runner:
            report = generate_tasks(Path(args.repo), args.test_cmd, Path(args.out), runner=runner, **options)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print_report(report)
    return 0 if report.valid > 0 else 1


# ---------------------------------------------------------------- SWE-bench

def import_swebench(args) -> int:
    files = import_instances(Path(args.instances), Path(args.checkout), Path(args.out))
    for f in files:
        print(f"wrote {f}")
    print(f"imported {len(files)} instance(s); next: fixrl tasks validate {args.out}")
    return 0


def export_swebench(args) -> int:
    out = Path(args.out)
    repos = Path(args.repos) if args.repos else out.with_name(out.stem + "-repo")
    written, skipped = export_suite(Path(args.suite), out, repos)
    for task_id, reason in skipped:
        print(f"skipped {task_id}: {reason}")
    print(f"wrote {written} instance(s) to {out}")
    if repos.exists():
        print(f"buggy states committed to {repos} (tags fixrl/<id>); import with --checkout {repos}")
    return 0 if written else 1

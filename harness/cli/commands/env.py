"""fixrl env build | detect: a repository's environment (the packages its tests need)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import yaml

from fixrl.harness.cli import UserError
from fixrl.sandbox.environment import EnvSpec, build_environment
from fixrl.tasks.format.environment import detect_environment, spec_of
from fixrl.tasks.format.loader import environment_spec, load_suite


def register(sub) -> None:
    p = sub.add_parser("env", help="repository environments: the packages a repository's tests need")
    esub = p.add_subparsers(dest="env_command", metavar="ACTION", required=True)

    b = esub.add_parser("build", help="resolve and download on this host (network: the package registry), "
                        "then install without network: a virtual environment (local) or an image layer (docker), "
                        "cached by a hash of the spec")
    b.add_argument("path", help="a suite directory (every task's environment) or a repository (its detected one)")
    b.add_argument("--backend", choices=["local", "docker"], default="local", help="sandbox backend to build for")
    b.add_argument("--force", action="store_true", help="build again even when cached")
    b.add_argument("--json", action="store_true", help="print what was built as JSON")
    b.set_defaults(func=build)

    d = esub.add_parser("detect", help="print the `environment:` a repository's packaging files call for")
    d.add_argument("repo", help="the repository")
    d.set_defaults(func=detect)


def _specs(path: Path) -> list[tuple[str, EnvSpec, dict]]:
    """(where from, spec, its mapping) for each distinct environment of a suite or a repository."""
    if (path / "suite.yaml").is_file() or (path / "tasks").is_dir():
        found: dict[str, tuple[str, EnvSpec, dict]] = {}
        for task in load_suite(path).tasks:
            if task.environment is not None and task.env_tag not in found:
                env = task.environment.model_dump(exclude_defaults=True)
                found[str(task.env_tag)] = (f"task {task.id}", environment_spec(task), env)
        return list(found.values())
    env = detect_environment(path)
    return [] if env is None else [(str(path), spec_of(env, path), env)]


def build(args) -> int:
    path = Path(args.path)
    if not path.is_dir():
        raise UserError(f"{path}: not a suite or repository directory")
    specs = _specs(path)
    say = (lambda line: print(line, file=sys.stderr)) if args.json else print
    if not specs:
        say(f"{path}: no environment needed (no dependencies beyond pytest); sandboxes run "
            f"{'the image' if args.backend == 'docker' else 'fixrl'}'s interpreter")
    done = []
    for where, spec, env in specs:
        name = spec.tag()
        say(f"{name} ({where}): {env}")
        start = time.monotonic()
        tag = build_environment(spec, args.backend, lambda line, t=name: _progress(f"  {t}: {line}"), force=args.force)
        seconds = round(time.monotonic() - start, 1)
        done.append({"tag": tag, "backend": args.backend, "environment": env, "seconds": seconds})
        say(f"  {tag}: ready ({seconds} s)")
    if args.json:
        print(json.dumps({"environments": done}, indent=2))
    return 0


def _progress(line: str) -> None:
    """A build step or one of pip's news (sandbox.environment._run): on stderr, as it comes."""
    print(line, file=sys.stderr, flush=True)


def detect(args) -> int:
    repo = Path(args.repo)
    if not repo.is_dir():
        raise UserError(f"{repo}: not a directory")
    env = detect_environment(repo)
    if env is None:
        print(f"# {repo}: no dependencies beyond pytest: no environment needed")
    else:
        print(yaml.safe_dump({"environment": env}, sort_keys=False), end="")
    return 0

"""fixrl tasks replay FILE... : episode files (envs/replay.py) through the agent's tools, each on
a fresh sandbox, with the reward each earned against the one it must earn."""
from __future__ import annotations

import contextlib
from pathlib import Path

from fixrl.envs.replay import load_episode, load_suite_of, replay
from fixrl.harness.cli import UserError
from fixrl.sandbox.pool import SandboxPool


def register(tsub) -> None:
    r = tsub.add_parser("replay", help="replay episode files (a fixed list of tool calls, e.g. attacks) "
                        "through the agent's tools and compare each reward with the one it must earn")
    r.add_argument("files", nargs="+", help="episode files (.yaml) or folders of them")
    r.add_argument("--backend", choices=["local", "forking", "docker"], default="local",
                   help="where the episode runs: local, local with the rollouts' forking check, or docker")
    r.set_defaults(func=run)


def _files(args) -> list[Path]:
    files: list[Path] = []
    for name in args.files:
        path = Path(name)
        if path.is_dir():
            files += sorted(path.rglob("*.yaml"))
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(f"{path}: no such episode file or folder")
    if not files:
        raise UserError(f"no .yaml episode files under {', '.join(args.files)}")
    return files


def run(args) -> int:
    episodes = [load_episode(f) for f in _files(args)]  # every file is read before anything runs
    suites: dict[str, object] = {}
    wrong = 0
    with contextlib.ExitStack() as stack:
        checks = None
        if args.backend == "forking":
            checks = stack.enter_context(SandboxPool(1, backend="local")).check_sandbox
        for ep in episodes:
            suite = suites.setdefault(ep.suite, load_suite_of(ep))
            reward, info = replay(ep, suite, "docker" if args.backend == "docker" else "local", checks)
            ok = reward == ep.expect and info.outcome != "error"
            wrong += not ok
            why = info.error or "; ".join(info.rule_violations) or ""
            print(f"{'ok  ' if ok else 'FAIL'} {ep.path}  [{ep.kind}] reward {reward:g} (must be {ep.expect:g}) "
                  f"{info.outcome}{': ' + why if why else ''}")
    print(f"{len(episodes) - wrong}/{len(episodes)} episodes earned what they must")
    return 0 if wrong == 0 else 1

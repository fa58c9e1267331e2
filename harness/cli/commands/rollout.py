"""fixrl rollout: run episodes with a scripted policy or a model, print readable transcripts and
save the trajectories as JSONL."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from fixrl import tasks
from fixrl.evals.run import blind_limits
from fixrl.harness.agent.policies import close_policy
from fixrl.harness.agent.progress import Steps
from fixrl.harness.agent.rollouts import RolloutConfig, open_episode_rollouts
from fixrl.harness.agent.transcript import make_console, print_transcript, save_jsonl, summary_table
from fixrl.harness.cli.errors import UserError
from fixrl.harness.cli.flags import add_config_flags, config_from_flags
from fixrl.tasks.suites import BUILTIN_SUITE


def register(sub) -> None:
    p = sub.add_parser("rollout", help="run episodes (scripted policy or model), print transcripts, save JSONL")
    add_config_flags(p, RolloutConfig, aliases={"tasks": ["--task"], "n": ["-n"]},
                     skip=("episode.env.reward", "episode.env.system_prompt"))
    p.add_argument("--quiet", action="store_true", help="no transcripts, only the summary")
    p.add_argument("--max-lines", type=int, default=30, help="lines shown per observation (0 = all)")
    p.add_argument("--show-system", action="store_true", help="show the system prompt")
    p.set_defaults(func=run)


def resolve_suite(arg: str) -> tasks.Suite:
    """A suite from a directory or the word `builtin`; UserError on a bad one."""
    if arg == "builtin":

        path = Path(BUILTIN_SUITE)
    else:
        path = Path(arg)
    if not path.is_dir():
        raise UserError(f"--suite {arg}: no such directory (give a suite directory or `builtin`)")
    return tasks.load_suite(path)


def select_tasks(suite: tasks.Suite, ids: list[str] | None, split: str) -> list[tasks.Task]:
    chosen = list(suite.tasks) if split == "all" else list(suite.split(split))
    if ids:
        known = {t.id: t for t in suite.tasks}
        missing = [i for i in ids if i not in known]
        if missing:
            sample = ", ".join(sorted(known)[:8])
            raise UserError(f"--task {', '.join(missing)}: not in suite {suite.name!r} ({suite.dir}); "
                            f"its tasks include {sample}")
        chosen = [known[i] for i in ids]
    if not chosen:
        raise UserError(f"no tasks in suite {suite.name!r} for --split {split}")
    return chosen


def run(args: argparse.Namespace) -> int:
    cfg = config_from_flags(args, RolloutConfig)
    if cfg.n < 1:
        raise UserError(f"-n {cfg.n}: give at least 1 episode per task")
    cfg.episode.policy.check()
    suite = resolve_suite(cfg.suite)
    chosen = select_tasks(suite, cfg.tasks, cfg.split)
    note = blind_limits(suite, chosen) if cfg.episode.policy.policy == "blind" else None
    if note:
        print(f"note: {note}", file=sys.stderr)
    policy = cfg.episode.policy.load(cfg.seed)
    console = make_console()
    total = cfg.n * len(chosen)

    passed = [0]
    steps = Steps("rollout", total, unit="episodes", fields={"passed": 0}, console=console)

    def show(traj) -> None:
        if not args.quiet:
            print_transcript(traj, console, max_lines=args.max_lines, show_system=args.show_system)
        passed[0] += traj.info.outcome == "pass"
        steps.advance(passed=passed[0])

    t0 = time.time()
    try:
        with open_episode_rollouts(suite, cfg.episode) as rollouts, steps:
            trajs = rollouts.run(policy, chosen, cfg.n, cfg.seed, progress=show)
    finally:
        close_policy(policy)  # a vLLM server started for the job stops with it (Ctrl-C too)
    seconds = time.time() - t0
    console.print(summary_table(trajs, title=f"{policy.name} on {suite.name}: {total} episode"
                                             f"{'s' if total != 1 else ''} in {seconds:.1f} s"))
    if cfg.save:
        path = save_jsonl(trajs, cfg.save)
        console.print(f"saved {len(trajs)} trajectories to {path}")
    return 0

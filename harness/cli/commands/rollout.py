"""fixrl rollout: run episodes with a scripted policy or a model, print readable transcripts and
save the trajectories as JSONL."""
from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("rollout", help="run episodes (scripted policy or model), print transcripts, save JSONL")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--policy", help="scripted policy: oracle | blind | random")
    who.add_argument("--model", help="checkpoint directory of a causal LM (e.g. from `fixrl init-tiny`)")
    p.add_argument("--adapter", help="peft adapter directory to load on top of --model")
    p.add_argument("--suite", default="builtin", help="suite directory, or `builtin` (default)")
    p.add_argument("--task", action="append", metavar="ID", help="only this task (repeatable)")
    p.add_argument("--split", default="all", choices=["train", "heldout", "all"], help="tasks of this split (default all)")
    p.add_argument("-n", type=int, default=1, help="episodes per task (default 1)")
    p.add_argument("--save", metavar="FILE", help="write the trajectories as JSONL (.gz to compress)")
    p.add_argument("--backend", default="local", choices=["local", "docker"], help="sandbox backend (default local)")
    p.add_argument("--image", help="Docker image (default: the base sandbox image)")
    p.add_argument("--pool-size", type=int, help="sandboxes = episodes in lockstep (default min(episodes, 8))")
    p.add_argument("--ray", metavar="auto|ADDRESS", help="run the episodes' sandboxes on a Ray cluster")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature; 0 = greedy (model only)")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling (model only)")
    p.add_argument("--max-new-tokens", type=int, default=256, help="tokens per assistant turn (model only)")
    p.add_argument("--max-total-tokens", type=int, help="token budget per episode (ends as out_of_tokens)")
    p.add_argument("--max-turns", type=int, help="tool calls per episode (default: the task's limit)")
    p.add_argument("--rename", action="store_true", help="rename the buggy function per episode")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no transcripts, only the summary")
    p.add_argument("--max-lines", type=int, default=30, help="lines shown per observation (0 = all)")
    p.add_argument("--show-system", action="store_true", help="show the system prompt")
    p.set_defaults(func=run)


def resolve_suite(arg: str):
    """A suite from a directory or the word `builtin`; UserError on a bad one."""
    from fixrl.harness.cli import UserError

    try:
        from fixrl import tasks
    except ImportError as e:  # pragma: no cover - the tasks package is part of fixrl
        raise UserError(f"the tasks package is unavailable: {e}") from None
    if arg == "builtin":
        from fixrl.tasks.suites import BUILTIN_SUITE

        path = Path(BUILTIN_SUITE)
    else:
        path = Path(arg)
    if not path.is_dir():
        raise UserError(f"--suite {arg}: no such directory (give a suite directory or `builtin`)")
    try:
        return tasks.load_suite(path)
    except ValueError as e:
        raise UserError(f"--suite {arg}: {e}") from None


def select_tasks(suite, ids: list[str] | None, split: str) -> list:
    from fixrl.harness.cli import UserError

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


def run(args) -> int:
    import time

    from rich.console import Console

    from fixrl.harness.cli import UserError
    from fixrl.harness.agent.policies import load_policy
    from fixrl.harness.agent.transcript import print_transcript, save_jsonl, summary_table

    if args.n < 1:
        raise UserError(f"-n {args.n}: give at least 1 episode per task")
    if args.adapter and not args.model:
        raise UserError("--adapter goes with --model")
    if args.pool_size is not None and args.pool_size < 1:
        raise UserError(f"--pool-size {args.pool_size}: must be >= 1")
    suite = resolve_suite(args.suite)
    chosen = select_tasks(suite, args.task, args.split)
    try:
        if args.policy:
            policy = load_policy(policy=args.policy, seed=args.seed)
        else:
            policy = load_policy(model=args.model, adapter=args.adapter, temperature=args.temperature,
                                 top_p=args.top_p, max_new_tokens=args.max_new_tokens)
    except (OSError, ValueError) as e:
        what = f"--policy {args.policy}" if args.policy else f"--model {args.model}"
        raise UserError(f"{what}: {e}") from None

    from fixrl.envs import EnvConfig
    from fixrl.harness.agent.rollouts import open_rollouts
    from fixrl.sandbox import SandboxConfig, SandboxConfigError, SandboxError

    console = Console()
    total = args.n * len(chosen)
    size = args.pool_size or max(1, min(total, 8))
    config = EnvConfig(max_turns=args.max_turns, rename=args.rename)

    def show(traj) -> None:
        if not args.quiet:
            print_transcript(traj, console, max_lines=args.max_lines, show_system=args.show_system)

    t0 = time.time()
    try:
        sandbox = SandboxConfig(backend=args.backend, image=args.image, pool_size=size, ray=args.ray)
        with open_rollouts(suite, config, sandbox, max_total_tokens=args.max_total_tokens) as rollouts:
            trajs = rollouts.run(policy, chosen, args.n, args.seed, progress=show)
    except SandboxError as e:
        raise UserError(f"sandbox ({args.backend}): {e}") from None
    except SandboxConfigError as e:
        raise UserError(str(e)) from None
    seconds = time.time() - t0
    console.print(summary_table(trajs, title=f"{policy.name} on {suite.name}: {total} episode{'s' if total != 1 else ''} in {seconds:.1f} s"))
    if args.save:
        path = save_jsonl(trajs, args.save)
        console.print(f"saved {len(trajs)} trajectories to {path}")
    return 0

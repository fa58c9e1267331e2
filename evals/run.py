"""`evaluate`: n episodes per task through the same batched agent loop and sandbox pool as
training, scored with unbiased pass@k, with behaviour statistics and a bootstrap interval.

Results are written to an output directory:
  results.json             per task and overall (the input of `fixrl eval --compare` and reports)
  results.md               the same as a markdown table
  trajectories.jsonl.gz    every episode (Trajectory.to_dict per line)

Pairing: episode j of task t in a run with seed s always gets the same environment seed (the
agent loop derives it from s, the task id and j; it is recorded per episode), so two runs with the
same seed see the same renamings, and `compare` can difference them task by task.

Errored episodes (a sandbox died after retries) are counted apart and left out of pass@k: a task
scored from fewer episodes simply has a smaller n; a task with fewer than k scored episodes has
no pass@k (reported as null) and is left out of that k's mean.
"""
from __future__ import annotations

import gzip
import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fixrl import tasks as tasks_pkg
from fixrl.evals.passk import Interval, bootstrap_mean, paired_bootstrap, pass_at_k, verdict
from fixrl.evals.stats import behaviour_stats, format_stat, is_error, is_pass
from fixrl.harness.agent.policies import Policy, PolicyConfig, close_policy
from fixrl.harness.agent.progress import Steps
from fixrl.harness.agent.rollouts import Rollouts, open_episode_rollouts, open_rollouts
from fixrl.harness.agent.settings import EpisodeSettings
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.sandbox import SandboxConfig
from fixrl.tasks import Suite, Task
from fixrl.tasks.suites import BUILTIN_SUITE

RESULTS_FORMAT = 1


@dataclass
class EvalConfig:
    """Every setting of `fixrl eval`: n episodes per task of a split, scored with pass@k."""

    suite: str | None = None
    """Suite directory; None: the built-in suite."""
    split: str = "heldout"
    """Task split to evaluate."""
    tasks: list[str] | None = None
    """Only these task ids of the split (in this order)."""
    n: int = 8
    """Episodes per task."""
    ks: list[int] = field(default_factory=lambda: [1, 4, 8])
    """The k of each pass@k (every k <= n)."""
    seed: int = 0
    """Run seed: the same seed gives the same per-episode seeds (paired comparisons)."""
    out: str | None = None
    """Directory for results.json, results.md and trajectories.jsonl.gz."""
    overwrite: bool = False
    """Replace the results already in --out (without it, an --out that holds results is refused)."""
    episode: EpisodeSettings = field(default_factory=EpisodeSettings)
    """The policy evaluated, its episode settings (the ones it was trained with) and where they run."""


def run_eval(cfg: EvalConfig, progress: bool = True) -> EvalResult:
    """`fixrl eval`: the cheap checks first (clear errors before a model or the suite loads),
    then the policy, the rollouts and `evaluate`."""
    cfg.episode.policy.check()
    check_ks(cfg.n, cfg.ks)
    if cfg.out is not None:
        check_out(Path(cfg.out), cfg.overwrite)
    suite, chosen = load_split(cfg.suite or _builtin_suite(), cfg.split, cfg.tasks)
    if cfg.episode.policy.policy == "blind":
        note = blind_limits(suite, chosen)
        if note:
            print(f"note: {note}", file=sys.stderr)
    policy = cfg.episode.policy.load(cfg.seed)
    try:
        with open_episode_rollouts(suite, cfg.episode) as rollouts:
            return evaluate(policy, suite, split=cfg.split, n=cfg.n, ks=cfg.ks, seed=cfg.seed, task_ids=cfg.tasks,
                            rollouts=rollouts, out=cfg.out, progress=progress,
                            policy_info=cfg.episode.policy.describe())
    finally:
        close_policy(policy)  # a vLLM server started for the job stops with it


def blind_limits(suite: Suite, tasks: Sequence[Task]) -> str | None:
    """Why the blind baseline (one edit without reading: the named function's usual repair for
    its bug family) can score little or nothing on these tasks, when it can: tasks that name no
    `function:` are submitted unchanged, and a suite without `family_edits` and `family:` tags
    leaves it guessing among every mutation family. None when neither applies."""
    fixes = [t for t in tasks if t.kind == "fix"]
    unnamed = [t.id for t in fixes if not t.function]
    said = []
    if unnamed:
        said.append(f"{len(unnamed)} of {len(fixes)} fix tasks name no `function:` (e.g. {unnamed[0]}), so the "
                    "blind baseline submits them unchanged and scores 0 on them")
    if fixes and not suite.family_edits and not any(t.family for t in fixes):
        said.append("the suite has no `family_edits` in suite.yaml and its tasks no `family:` tags, so its one "
                    "blind edit is a guess among every mutation family")
    if not said:
        return None
    return "; ".join(said) + ": its score here is a floor, not the chance level of a guess"


def _builtin_suite() -> Path:
    return BUILTIN_SUITE


WRITTEN = ("results.json", "results.md", "trajectories.jsonl.gz", "report")
"""What an evaluation (and `fixrl report` after it) writes into its output directory."""


def check_out(out: Path, overwrite: bool) -> None:
    """Refuse an output directory that holds an evaluation's results (EvalError naming the flag);
    with `overwrite`, remove them first, so that no old report or trajectories stay beside the
    new results. Other files in the directory are left alone."""
    if out.exists() and not out.is_dir():
        raise EvalError(f"--out {out}: is a file; give a directory")
    found = [name for name in WRITTEN if (out / name).exists()]
    if not found:
        return
    if not overwrite:
        raise EvalError(f"--out {out}: already holds eval results ({', '.join(found)}); choose a new --out, "
                        "or pass --overwrite to replace them")
    for name in found:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


class EvalError(ValueError):
    """Bad input to an evaluation (the message names the argument or file and how to fix it)."""


# ----------------------------------------------------------------------------- records


@dataclass
class TaskResult:
    task_id: str
    family: str | None
    kind: str
    episodes: int
    """Episodes run (scored + errored)."""
    errors: int
    passes: int
    pass_at: dict[str, float | None]
    """"pass@K" -> unbiased estimate from this task's scored episodes (None if fewer than K)."""
    outcomes: list[str]
    """Per episode, in episode order: 'pass' | 'fail' | 'error'."""
    episode_seeds: list[Any]
    """Per episode: the environment seed (or the key it is derived from), for pairing runs."""
    stats: dict[str, Any]

    @property
    def scored(self) -> int:
        return self.episodes - self.errors

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        pa = d.pop("pass_at")
        d.update(pa)  # flat "pass@1" keys read better in JSON and pandas
        d["scored"] = self.scored
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskResult:
        pa = {k: v for k, v in d.items() if k.startswith("pass@")}
        return cls(task_id=d["task_id"], family=d.get("family"), kind=d.get("kind", "fix"),
                   episodes=int(d["episodes"]), errors=int(d.get("errors", 0)),
                   passes=int(d["passes"]), pass_at=pa, outcomes=list(d.get("outcomes", [])),
                   episode_seeds=list(d.get("episode_seeds", [])), stats=d.get("stats", {}))


@dataclass
class EvalResult:
    policy: dict[str, Any]
    suite: str
    split: str
    n: int
    ks: list[int]
    seed: int
    tasks: list[TaskResult]
    overall: dict[str, Any]
    """"pass@K" -> Interval dict (mean, low, high, level, tasks); 'stats'; counts."""
    backend: str = "local"
    temperature: float | None = None
    greedy: bool = False
    suite_dir: str | None = None
    seconds: float = 0.0
    created: str = ""
    out: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": RESULTS_FORMAT, "policy": self.policy, "suite": self.suite,
            "suite_dir": self.suite_dir, "split": self.split, "n": self.n, "ks": self.ks,
            "seed": self.seed, "backend": self.backend, "temperature": self.temperature,
            "greedy": self.greedy, "seconds": self.seconds, "created": self.created,
            "overall": self.overall, "tasks": [t.to_dict() for t in self.tasks],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalResult:
        return cls(policy=d.get("policy", {}), suite=d.get("suite", "?"), split=d.get("split", "?"),
                   n=int(d["n"]), ks=[int(k) for k in d["ks"]], seed=int(d.get("seed", 0)),
                   tasks=[TaskResult.from_dict(t) for t in d["tasks"]], overall=d["overall"],
                   backend=d.get("backend", "local"), temperature=d.get("temperature"),
                   greedy=bool(d.get("greedy", False)), suite_dir=d.get("suite_dir"),
                   seconds=float(d.get("seconds", 0.0)), created=d.get("created", ""))

    @classmethod
    def load(cls, path: Path | str) -> EvalResult:
        """From an eval output directory or its results.json."""
        p = Path(path)
        f = p / "results.json" if p.is_dir() else p
        if not f.is_file():
            raise EvalError(f"{p}: no eval results here (expected a directory written by "
                            f"`fixrl eval --out DIR`, holding results.json)")
        try:
            d = json.loads(f.read_text())
            r = cls.from_dict(d)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise EvalError(f"{f}: not a fixrl eval results file ({type(e).__name__}: {e})") from e
        r.out = str(f.parent)
        return r

    def pass_at(self, k: int) -> float | None:
        v = self.overall.get(f"pass@{k}")
        return v["mean"] if isinstance(v, dict) else None

    def summary(self) -> dict[str, Any]:
        """The overall figures (what `--json` prints)."""
        return {"policy": self.policy, "suite": self.suite, "split": self.split, "n": self.n,
                "seed": self.seed, **self.overall, "out": self.out}

    def to_markdown(self) -> str:
        name = self.policy.get("name", "?")
        o = self.overall
        lines = [f"# Eval: {name} on {self.suite} / {self.split}", "",
                 f"{o.get('tasks', len(self.tasks))} tasks, n={self.n} episodes each, seed "
                 f"{self.seed}, {self._sampling()}, "
                 f"backend {self.backend}; {o.get('errors', 0)} errored episode(s) left out.", "",
                 *([f"**Interrupted**: {o['interrupted']['finished']} of {o['interrupted']['planned']} episodes "
                    "had finished; the figures are from those.", ""] if o.get("interrupted") else []),
                 "| metric | mean | 95% interval | tasks |", "|---|---|---|---|"]
        for k in self.ks:
            v = o.get(f"pass@{k}")
            if isinstance(v, dict):
                lines.append(f"| pass@{k} | {v['mean']:.3f} | [{v['low']:.3f}, {v['high']:.3f}] "
                             f"| {v.get('tasks', '')} |")
        s = o.get("stats", {})
        lines += ["", "| behaviour (per scored episode) | value |", "|---|---|"]
        for key, label in (("reads", "reads"), ("tests", "tests"), ("edits", "edits"),
                           ("turns", "turns"), ("policy_tokens", "policy tokens"),
                           ("policy_tokens_pass", "policy tokens (passing)"),
                           ("policy_tokens_fail", "policy tokens (failing)"),
                           ("read_before_edit", "read before first edit (share of editors)"),
                           ("reads_before_first_edit", "reads before first edit"),
                           ("first_edit_right", "first edit right (where known)")):
            lines.append(f"| {label} | {format_stat(s.get(key))} |")
        for status, share in (s.get("exit_status") or {}).items():
            lines.append(f"| ended {status} | {share:.2f} |")
        head = " | ".join(f"pass@{k}" for k in self.ks)
        lines += ["", f"| task | family | passes/scored | errors | {head} |",
                  "|---|---|---|---|" + "---|" * len(self.ks)]
        for t in self.tasks:
            vals = " | ".join(format_stat(t.pass_at.get(f"pass@{k}"), 3) for k in self.ks)
            lines.append(f"| {t.task_id} | {t.family or '-'} | {t.passes}/{t.scored} | "
                         f"{t.errors} | {vals} |")
        return "\n".join(lines) + "\n"

    def _sampling(self) -> str:
        if self.greedy:
            return "greedy decoding"
        if self.temperature is None:
            return "scripted policy"
        return f"temperature {self.temperature:g}"

    def save(self, out: Path | str) -> Path:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        (out / "results.md").write_text(self.to_markdown())
        self.out = str(out)
        return out


# ----------------------------------------------------------------------------- scoring


def check_ks(n: int, ks: Sequence[int]) -> list[int]:
    ks = sorted({int(k) for k in ks})
    if n < 1:
        raise EvalError(f"-n must be >= 1 episodes per task, got {n}")
    if not ks:
        raise EvalError("-k: give at least one k, e.g. -k 1,4,8")
    bad = [k for k in ks if k < 1 or k > n]
    if bad:
        raise EvalError(f"-k {','.join(map(str, bad))}: every k must be between 1 and -n ({n}); "
                        f"pass@k needs at least k episodes per task (raise -n or drop that k)")
    return ks


def _episode_seed(traj: Trajectory, seed: int, task_index: int, j: int) -> Any:
    if traj.info.seed is not None:
        return traj.info.seed
    return f"{seed}/{task_index}/{j}"


def score(trajectories: Sequence[Any], tasks: Sequence[Any], ks: Sequence[int], *,
          n: int, seed: int = 0, bootstrap_seed: int = 0) -> tuple[list[TaskResult], dict]:
    """Per-task results and overall figures from trajectories (`traj.group` = index in `tasks`,
    or matched by task_id when group is None). Pure: no sandboxes, no model."""
    by_task: list[list[Any]] = [[] for _ in tasks]
    index = {t.id: i for i, t in enumerate(tasks)}
    for traj in trajectories:
        g = getattr(traj, "group", None)
        if g is None:
            g = index.get(traj.task_id)
        if g is None or not 0 <= g < len(tasks):
            raise EvalError(f"trajectory for task {traj.task_id!r} matches no task of the split")
        by_task[g].append(traj)
    results = []
    for i, (task, trajs) in enumerate(zip(tasks, by_task)):
        infos = [t.info.to_dict() for t in trajs]
        errors = sum(1 for x in infos if is_error(x))
        passes = sum(1 for x in infos if is_pass(x))
        scored = len(trajs) - errors
        pa = {f"pass@{k}": (pass_at_k(scored, passes, k) if scored >= k else None) for k in ks}
        results.append(TaskResult(
            task_id=task.id, family=getattr(task, "family", None), kind=getattr(task, "kind", "fix"),
            episodes=len(trajs), errors=errors, passes=passes, pass_at=pa,
            outcomes=[x.get("outcome") or "fail" for x in infos],
            episode_seeds=[_episode_seed(t, seed, i, j) for j, t in enumerate(trajs)],
            stats=behaviour_stats(trajs)))
    overall: dict[str, Any] = {"tasks": len(tasks), "episodes": len(trajectories),
                               "errors": sum(r.errors for r in results)}
    for k in ks:
        vals = [r.pass_at[f"pass@{k}"] for r in results if r.pass_at[f"pass@{k}"] is not None]
        if vals:
            iv = bootstrap_mean(vals, seed=bootstrap_seed)
            overall[f"pass@{k}"] = {**iv.to_dict(), "tasks": len(vals)}
        else:
            overall[f"pass@{k}"] = None
    overall["stats"] = behaviour_stats(trajectories)
    return results, overall


# ----------------------------------------------------------------------------- running


def load_split(suite: Suite | Path | str, split: str,
               task_ids: Sequence[str] | None = None) -> tuple[Suite, list[Task]]:
    """(Suite, its tasks in `split`, optionally only `task_ids`); clear errors for a missing
    suite, an empty split or an unknown task id."""

    if isinstance(suite, (str, Path)):
        path = Path(suite)
        if not path.exists():
            raise EvalError(f"--suite {path}: no such directory")
        try:
            suite = tasks_pkg.load_suite(path)
        except ValueError as e:  # tasks.TaskError names the file and field
            raise EvalError(f"--suite {path}: {e}") from e
    chosen = list(suite.split(split))
    if not chosen:
        counts: dict[str, int] = {}
        for t in suite.tasks:
            counts[t.split] = counts.get(t.split, 0) + 1
        have = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "none"
        hint = f"; give --split {' or --split '.join(sorted(counts))}" if counts else ""
        raise EvalError(f"--split {split}: suite {suite.name!r} ({suite.dir}) has no tasks in "
                        f"split {split!r} (tasks per split: {have}){hint} (`fixrl tasks new` writes train "
                        f"tasks; `split: heldout` in a task file holds it out)")
    if task_ids:
        by_id = {t.id: t for t in chosen}
        missing = [i for i in task_ids if i not in by_id]
        if missing:
            raise EvalError(f"--task {', '.join(missing)}: not in split {split!r} of suite "
                            f"{suite.name!r} (it has {len(chosen)} tasks, e.g. "
                            f"{', '.join(list(by_id)[:3])})")
        chosen = [by_id[i] for i in dict.fromkeys(task_ids)]
    return suite, chosen


def evaluate(policy: Policy | str, suite: Suite | Path | str, *, split: str = "heldout", n: int = 8,
             ks: Sequence[int] = (1, 4, 8), seed: int = 0, task_ids: Sequence[str] | None = None,
             rollouts: Rollouts | None = None, out: Path | str | None = None, progress: bool = True,
             policy_info: dict[str, Any] | None = None, save_trajectories: bool = True) -> EvalResult:
    """Run n episodes per task of `split` and score them.

    policy: a harness Policy, or a scripted policy's name ("oracle" | "blind" | "random").
    suite: a tasks.Suite or a suite directory. ks: every k must be <= n. task_ids: only these
    tasks of the split (in this order). rollouts: where the episodes run and with which episode
    settings (the caller's, kept open across calls); None: default settings in a local pool of
    up to 8 sandboxes, opened and closed here. out: directory for results.json, results.md and
    the trajectories. The sampling temperature is the policy's own, recorded in the results.
    """
    ks = check_ks(n, ks)
    suite, chosen = load_split(suite, split, task_ids)
    if isinstance(policy, str):
        pc = PolicyConfig(policy=policy)
        policy, desc = pc.load(seed), pc.describe()
    else:
        desc = dict(policy_info or {"name": type(policy).__name__, "kind": "object"})
    temperature = getattr(policy, "temperature", None)
    greedy = bool(getattr(policy, "greedy", False))
    desc.setdefault("temperature", temperature)
    desc.setdefault("greedy", greedy)
    if desc.get("precision") is None:  # the setting the model runs in, resolved on its device
        desc["precision"] = getattr(policy, "precision", None)
    total = n * len(chosen)
    own = rollouts is None
    if own:
        rollouts = open_rollouts(suite, sandbox=SandboxConfig(pool_size=max(1, min(total, 8))))
    t0 = time.time()
    finished: list[Trajectory] = []

    def done(traj: Trajectory) -> None:
        finished.append(traj)
        steps.advance(passed=sum(t.info.outcome == "pass" for t in finished))

    steps = Steps("eval", total, unit="episodes", fields={"passed": 0}, enabled=progress)
    interrupted = False
    try:
        with steps:
            trajs = rollouts.run(policy, chosen, n, seed, progress=done)
    except KeyboardInterrupt:
        # The episodes that finished are kept: scored and written as a partial result.
        interrupted, trajs = True, list(finished)
    finally:
        if own:
            rollouts.close()
    # Episode order within a task follows the agent loop's (episode j of the group).
    trajs = sorted(trajs, key=lambda t: (t.group if t.group is not None else -1))
    results, overall = score(trajs, chosen, ks, n=n, seed=seed, bootstrap_seed=seed)
    if interrupted:
        overall["interrupted"] = {"finished": len(trajs), "planned": total}
    result = EvalResult(policy=desc, suite=suite.name, split=split, n=n, ks=ks, seed=seed,
                        tasks=results, overall=overall, backend=rollouts.backend, temperature=temperature,
                        greedy=greedy, suite_dir=str(suite.dir), seconds=time.time() - t0,
                        created=time.strftime("%Y-%m-%dT%H:%M:%S"))
    if out is not None:
        result.save(out)
        if save_trajectories:
            save_trajectories_gz(trajs, Path(out) / "trajectories.jsonl.gz")
    if interrupted:
        where = f"written to {out}/ (`fixrl report {out}` reads it)" if out is not None else "not written (no --out)"
        print(f"eval interrupted: {len(trajs)} of {total} episodes had finished; the partial result is {where}",
              file=sys.stderr)
        raise KeyboardInterrupt
    return result


def save_trajectories_gz(trajs: Sequence[Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for t in trajs:
            f.write(json.dumps(t.to_dict(), default=str) + "\n")
    return path


def load_trajectories_gz(path: Path) -> list[Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [Trajectory.from_dict(json.loads(line)) for line in f if line.strip()]


# ----------------------------------------------------------------------------- comparing


@dataclass
class Comparison:
    a: str
    b: str
    tasks: int
    seed_paired: bool
    """Both runs used the same per-episode seeds (same renamings, same episode order)."""
    diffs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """"pass@K" -> {a, b, diff: Interval dict, verdict}."""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_text(self) -> str:
        lines = [f"A = {self.a}", f"B = {self.b}",
                 f"{self.tasks} tasks, paired by task"
                 + (" and episode seed" if self.seed_paired else "")]
        lines += [f"note: {x}" for x in self.notes]
        for key, d in self.diffs.items():
            iv = d["diff"]
            lines.append(f"{key}: A {d['a']:.3f}  B {d['b']:.3f}  B-A {iv['mean']:+.3f} "
                         f"[{iv['low']:+.3f}, {iv['high']:+.3f}]  -> {d['verdict']}")
        return "\n".join(lines)


def compare(a: EvalResult, b: EvalResult, *, ks: Sequence[int] | None = None,
            seed: int = 0) -> Comparison:
    """Paired comparison of two eval results on the same tasks: per-task pass@k differences,
    their mean and a paired bootstrap 95% interval, and a verdict."""
    ta = {t.task_id: t for t in a.tasks}
    tb = {t.task_id: t for t in b.tasks}
    if set(ta) != set(tb):
        only_a = sorted(set(ta) - set(tb))
        only_b = sorted(set(tb) - set(ta))

        def few(xs: list[str]) -> str:
            return ", ".join(xs[:5]) + (f" (+{len(xs) - 5} more)" if len(xs) > 5 else "")

        raise EvalError(
            f"the two runs cover different tasks ({len(ta)} vs {len(tb)}); a paired comparison "
            f"needs the same suite and split."
            + (f" Only in A ({a.out or 'A'}): {few(only_a)}." if only_a else "")
            + (f" Only in B ({b.out or 'B'}): {few(only_b)}." if only_b else ""))
    ids = [t.task_id for t in a.tasks]
    label_a = a.out or a.policy.get("name", "A")
    label_b = b.out or b.policy.get("name", "B")
    notes = []
    seed_paired = all(ta[i].episode_seeds[: min(len(ta[i].episode_seeds), len(tb[i].episode_seeds))]
                      == tb[i].episode_seeds[: min(len(ta[i].episode_seeds),
                                                   len(tb[i].episode_seeds))] for i in ids)
    if not seed_paired:
        notes.append("episode seeds differ between the runs: paired by task only (rerun with the "
                     "same --seed for a tighter comparison)")
    if a.n != b.n:
        notes.append(f"the runs used different n ({a.n} vs {b.n}); pass@k stays unbiased, the "
                     f"noise differs")
    if a.suite != b.suite or a.split != b.split:
        notes.append(f"suite/split differ by name: {a.suite}/{a.split} vs {b.suite}/{b.split}")
    common = sorted(set(a.ks) & set(b.ks)) if ks is None else sorted(set(int(k) for k in ks))
    if not common:
        raise EvalError(f"the runs share no k to compare (A: {a.ks}, B: {b.ks})")
    cmp = Comparison(a=str(label_a), b=str(label_b), tasks=len(ids), seed_paired=seed_paired,
                     notes=notes)
    for k in common:
        key = f"pass@{k}"
        pairs = [(ta[i].pass_at.get(key), tb[i].pass_at.get(key)) for i in ids]
        pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
        if not pairs:
            notes.append(f"{key}: no task has at least {k} scored episodes in both runs")
            continue
        if len(pairs) < len(ids):
            notes.append(f"{key}: {len(ids) - len(pairs)} task(s) left out (fewer than {k} "
                         f"scored episodes in a run)")
        xa, xb = [p[0] for p in pairs], [p[1] for p in pairs]
        diff = paired_bootstrap(xa, xb, seed=seed)
        cmp.diffs[key] = {"a": sum(xa) / len(xa), "b": sum(xb) / len(xb), "tasks": len(pairs),
                          "diff": diff.to_dict(),
                          "verdict": verdict(diff, label_a="A", label_b="B")}
    if not cmp.diffs:
        raise EvalError("nothing to compare: " + "; ".join(notes))
    return cmp


__all__ = ["evaluate", "score", "compare", "EvalResult", "TaskResult", "Comparison", "EvalError",
           "EvalConfig", "run_eval", "load_split", "check_ks",
           "save_trajectories_gz", "load_trajectories_gz", "Interval"]

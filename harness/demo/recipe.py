"""`fixrl demo`: the whole of fixrl on any laptop, one stage after another.

1. load the suite (default: the built-in `gym` suite, made for small models);
2. build a tiny Qwen2-architecture policy and fine-tune it (SFT) on scripted demonstrations on
   the train split: mostly blind and random play, a small share of informed play (read, then
   the right fix) -- RL can only amplify a skill the start already shows -- plus informed
   episodes whose choice to read is out of the loss: how to use a read, not when. SFT runs on
   excerpts of the informed episodes first (`excerpts.py`), then on them whole, then on them all
   (with path excerpts, `path_copies`, in the first and last stage); then measure whether the
   start opens the issue's file and picks the right repair after a read (teacher-forced,
   `read_use.py`);
3. probe it: will GRPO have signal?
4. train it with GRPO;
5. evaluate start and end on the held-out split, next to the best blind policy, and write the
   report's plots and `results.json`.

Every stage writes its outputs into `--out` as it goes and is skipped when they are already
there, so a killed demo resumes where it stopped (GRPO itself resumes mid-run). The figures of
past runs, and why the recipe is what it is: NOTES.md beside this file.
"""
from __future__ import annotations

import dataclasses
import json
import random
import time
from pathlib import Path
from typing import Any

from rich.table import Table
from transformers import AutoTokenizer
from transformers.utils import logging as hf_logging

from fixrl import tasks as tasks_pkg
from fixrl.envs.scripted import OraclePlan
from fixrl.evals.probe import run_probe
from fixrl.evals.report import report
from fixrl.evals.run import EvalResult, compare, evaluate
from fixrl.harness.agent.chat import tool_choice_span
from fixrl.harness.agent.policies.hf import HFPolicy
from fixrl.harness.agent.policies.scripted import PlanFactory, ScriptedPolicy
from fixrl.harness.agent.rollouts import Rollouts, open_rollouts
from fixrl.harness.agent.transcript import load_jsonl, make_console, save_jsonl
from fixrl.harness.demo.config import DemoConfig
from fixrl.harness.demo.excerpts import excerpts, path_excerpts
from fixrl.harness.demo.read_use import read_use
from fixrl.harness.demo.vocab_head import data_vocab_head
from fixrl.harness.demo.weights import value_weights
from fixrl.harness.model.tiny import init_tiny
from fixrl.tasks.suites import GYM_SUITE
from fixrl.train.grpo import run_grpo
from fixrl.train.sft import SFTHooks, run_sft


def run_demo(cfg: DemoConfig, console: Any = None) -> dict[str, Any]:
    """Every stage in turn; returns (and writes to OUT/results.json) the figures of the run."""
    hf_logging.disable_progress_bar()
    console = console or make_console()
    started = time.time()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "demo_config.json").write_text(json.dumps(cfg.to_dict(), indent=2, default=str))

    _stage(console, "1/5 suite")
    suite_dir = Path(cfg.suite) if cfg.suite else GYM_SUITE
    suite = tasks_pkg.load_suite(suite_dir)
    console.print(f"suite {suite.name}: {len(suite.split('train'))} train, {len(suite.split('heldout'))} held-out "
                  f"tasks; families {', '.join(suite.families)}; tools {', '.join(suite.tools)}")
    # One set of sandboxes for every stage's episodes but GRPO's (a run of its own).
    with open_rollouts(suite, cfg.env, cfg.sandbox, cfg.cluster) as rollouts:
        _stage(console, "2/5 tiny policy, demonstrations, SFT")
        model = _tiny_model(cfg, out)
        demos, informed = _demonstrations(cfg, out, suite, rollouts, console)
        sft_model = _fine_tune(cfg, out, model, demos, informed, console)
        read_uses = _ReadUses(cfg, out, suite, rollouts, console)
        read_uses.measure("start", _policy(cfg, sft_model))

        _stage(console, "3/5 probe")
        probe = _probe(cfg, out, suite, sft_model, rollouts, console)

        _stage(console, f"4/5 GRPO ({cfg.grpo.preset}, {cfg.grpo.max_steps} steps)")
        summary = _grpo(cfg, out, suite_dir, sft_model, console)

        _stage(console, "5/5 held-out evaluation")
        end_policy = _policy(cfg, sft_model, Path(summary["adapter"]))
        evals = {"blind": _held_out_eval(cfg, out, suite, rollouts, "blind", "blind"),
                 "start": _held_out_eval(cfg, out, suite, rollouts, "start", _policy(cfg, sft_model)),
                 "end": _held_out_eval(cfg, out, suite, rollouts, "end", end_policy, step=summary["steps"])}
        read_uses.measure("end", end_policy, grpo_step=summary["steps"])
    rows = _summary_table(cfg, suite, evals, console)
    console.print(compare(evals["start"], evals["end"]).to_text())
    report_md = report(out / "grpo")
    for dest in (out / "eval_start", out / "eval_end"):
        report(dest)  # per-task pass charts of both ends, `eval_*/report/`
    results = _results(cfg, suite, rows, read_uses.values, probe, summary, started)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    console.print(f"results: {out / 'results.json'}  report: {report_md}  ({results['minutes']:.1f} min)")
    return results


# ----------------------------------------------------------------------------- stage 2


def _tiny_model(cfg: DemoConfig, out: Path) -> Path:
    model = out / "model"
    if not (model / "config.json").exists():
        init_tiny(model, hidden_size=cfg.hidden_size, num_layers=cfg.num_layers,
                  intermediate_size=2 * cfg.hidden_size, seed=cfg.seed)
    return model


def _informed_oracle(cfg: DemoConfig) -> PlanFactory | None:
    """The oracle of the informed demonstrations: read, fix, (test,) submit."""
    if cfg.informed_tests:
        return None  # the built-in oracle tests before it submits

    def plan(task: Any, env: Any, rng: random.Random) -> OraclePlan:
        return OraclePlan(task, env, run_tests=False)

    return plan


def _scripted(cfg: DemoConfig, kind: str, seed: int) -> ScriptedPolicy:
    return ScriptedPolicy(kind, seed=seed, plan=_informed_oracle(cfg) if kind == "oracle" else None)


def _demonstrations(cfg: DemoConfig, out: Path, suite: Any, rollouts: Rollouts, console: Any) -> tuple[Path, Path]:
    """demos.jsonl (every demonstration) and demos_informed.jsonl (the oracle's), written whole."""
    demos, informed = out / "demos.jsonl", out / "demos_informed.jsonl"
    if demos.exists():
        return demos, informed
    train_tasks = suite.split("train")
    plan = [(kind, count, False) for kind, count in cfg.demo_mix.items()]
    plan += [("oracle", cfg.after_read, True)] if cfg.after_read else []
    partial, informed_partial = demos.with_suffix(".partial"), informed.with_suffix(".partial")
    with open(partial, "w") as f, open(informed_partial, "w") as f_informed:
        for i, (kind, count, read_masked) in enumerate(plan):
            policy = _scripted(cfg, kind, cfg.seed + i)
            trajs = []
            for j, (tasks_j, n) in enumerate(_spread(train_tasks, count, cfg.seed + i)):
                trajs += rollouts.run(policy, tasks_j, n, cfg.seed + 100 * i + j)
            trajs = [t for t in trajs if not t.errored]
            if read_masked:
                trajs = [t.with_masked([tool_choice_span(t, policy.tokenizer)]) for t in trajs]
            lines = [json.dumps(t.to_dict()) + "\n" for t in trajs]
            f.writelines(lines)
            if kind == "oracle":
                f_informed.writelines(lines)
            label = f"{kind}, choice to read masked" if read_masked else kind
            console.print(f"  {label}: {len(trajs)} demonstrations, pass rate "
                          f"{sum(t.reward for t in trajs) / max(len(trajs), 1):.2f}")
    informed_partial.rename(informed)
    partial.rename(demos)
    return demos, informed


def _excerpt_files(cfg: DemoConfig, out: Path, model: Path, demos: Path, informed: Path,
                   console: Any) -> tuple[Path, Path]:
    """demos_excerpts.jsonl and demos_paths.jsonl (each made once, when its stage is on)."""
    excerpt_file, path_file = out / "demos_excerpts.jsonl", out / "demos_paths.jsonl"
    if cfg.excerpt_copies and cfg.sft_excerpt_epochs and not excerpt_file.exists():
        trajs = load_jsonl(informed)
        tokenizer = AutoTokenizer.from_pretrained(model)
        cuts = excerpts(trajs, tokenizer, cfg.excerpt_copies, cfg.excerpt_lines, cfg.seed + 9)
        _write_jsonl(excerpt_file, cuts)
        console.print(f"  excerpts: {len(cuts)} of {len(trajs)} informed demonstrations")
    if cfg.path_copies and not path_file.exists():
        trajs = load_jsonl(demos)
        cuts = path_excerpts(trajs, AutoTokenizer.from_pretrained(model), cfg.path_copies, cfg.seed + 11)
        _write_jsonl(path_file, cuts)
        console.print(f"  path excerpts: {len(cuts)} of {len(trajs)} demonstrations")
    return excerpt_file, path_file


def _fine_tune(cfg: DemoConfig, out: Path, model: Path, demos: Path, informed: Path, console: Any) -> Path:
    """The SFT stages (excerpts, informed demonstrations, every demonstration), each from the
    last; every weight of the tiny model trains, through the data-vocabulary head. A LoRA on
    random weights learns next to nothing (frozen random embeddings and head), so SFT trains
    every weight and GRPO then trains a LoRA adapter on top: the set-up a real user has with an
    SFT'd Qwen2.5 checkpoint."""
    excerpt_file, path_file = _excerpt_files(cfg, out, model, demos, informed, console)
    paths = [path_file] if cfg.path_copies else []
    plan = [([excerpt_file, *paths], out / "sft_excerpts", cfg.sft_excerpt_epochs if cfg.excerpt_copies else 0),
            ([informed], out / "sft_informed", cfg.sft_informed_epochs),
            ([demos, *paths], out / "sft_model", cfg.sft.num_train_epochs)]
    every_file = {f for data, _, _ in plan for f in data}
    start_from = model
    for data, dest, epochs in plan:
        if not epochs:
            continue
        if not (dest / "config.json").exists():
            others = sorted(str(f) for f in every_file - set(data) if f.exists())
            hooks = SFTHooks(token_weights=value_weights(cfg.value_weight), output_head=data_vocab_head(others))
            stage = dataclasses.replace(cfg.sft, model=str(start_from), data=[str(d) for d in data], out=str(dest),
                                        num_train_epochs=epochs)
            run_sft(stage, console=console, hooks=hooks)
        start_from = dest
    return out / "sft_model"


def _policy(cfg: DemoConfig, model: Path, adapter: Path | None = None) -> HFPolicy:
    return HFPolicy(model, adapter=adapter, temperature=cfg.grpo.temperature, max_new_tokens=cfg.grpo.max_new_tokens)


class _ReadUses:
    """Does a policy open the issue's file and pick the right repair after a read? Scored
    teacher-forced on scripted informed episodes of the held-out tasks (measurement only;
    nothing trains on them); kept in OUT/read_use.json by name."""

    def __init__(self, cfg: DemoConfig, out: Path, suite: Any, rollouts: Rollouts, console: Any) -> None:
        self.file, self.console = out / "read_use.json", console
        self.values = json.loads(self.file.read_text()) if self.file.exists() else {}
        episodes = out / "read_use_episodes.jsonl"
        if not episodes.exists():
            heldout = suite.split("heldout")
            trajs = rollouts.run(_scripted(cfg, "oracle", cfg.seed + 5), heldout, 1, cfg.seed + 5)
            _write_jsonl(episodes, [t for t in trajs if not t.errored])
        self.episodes = load_jsonl(episodes)
        self.family_of = {t.id: t.family for t in suite.split("heldout")}

    def measure(self, name: str, policy: HFPolicy, grpo_step: int | None = None) -> None:
        if name in self.values and self.values[name].get("grpo_step") == grpo_step:
            return
        result = read_use(policy.model, policy.tokenizer, self.episodes, self.family_of)
        self.console.print(result.to_text())
        self.values[name] = {**result.to_dict(), **({"grpo_step": grpo_step} if grpo_step is not None else {})}
        self.file.write_text(json.dumps(self.values, indent=2))


# ----------------------------------------------------------------------------- stages 3-5


def _probe(cfg: DemoConfig, out: Path, suite: Any, sft_model: Path, rollouts: Rollouts, console: Any) -> dict:
    """Does the start pass some attempts and fail others on the train tasks?"""
    probe_file = out / "probe.json"
    if probe_file.exists():
        return json.loads(probe_file.read_text())
    train_tasks = suite.split("train")
    sample = _spread(train_tasks, min(cfg.probe_tasks, len(train_tasks)), cfg.seed + 3)[0][0]
    result = run_probe(_policy(cfg, sft_model), suite, split="train", k=cfg.probe_k, seed=cfg.seed + 3,
                       rollouts=rollouts, task_ids=[t.id for t in sample])
    console.print(result.to_text())
    probe = result.to_dict()
    probe_file.write_text(json.dumps(probe, indent=2))
    return probe


def _grpo(cfg: DemoConfig, out: Path, suite_dir: Path, sft_model: Path, console: Any) -> dict[str, Any]:
    """GRPO from the SFT model with a new LoRA adapter. A rerun with more steps than the run has
    done trains on from its last checkpoint; with as many or fewer it trains no more (a
    checkpoint is never rolled back)."""
    run_dir = out / "grpo"
    grpo_cfg = cfg.grpo.updated(model=str(sft_model), adapter=None, suite=str(suite_dir), out=str(run_dir))
    resume = (run_dir / "checkpoint").exists()
    return run_grpo(grpo_cfg, resume=resume, overrides={"max_steps": grpo_cfg.max_steps} if resume else None,
                    console=console)


def _held_out_eval(cfg: DemoConfig, out: Path, suite: Any, rollouts: Rollouts, name: str, policy: Any,
                   step: int = 0) -> EvalResult:
    """Reused on a rerun unless it scored another GRPO step (a rerun that trained on); the step
    is recorded with the policy in the evaluation's results.json."""
    dest = out / f"eval_{name}"
    if (dest / "results.json").exists():
        done = EvalResult.load(dest)
        if done.policy.get("grpo_step", 0) == step:
            return done
    return evaluate(policy, suite, split="heldout", n=cfg.eval_n, ks=cfg.ks, seed=cfg.seed + 7, out=dest,
                    rollouts=rollouts, policy_info={"name": f"demo {name}", "kind": "object", "grpo_step": step})


def _summary_table(cfg: DemoConfig, suite: Any, evals: dict[str, EvalResult], console: Any) -> dict[str, dict]:
    table = Table(title=f"held-out tasks ({len(suite.split('heldout'))}), {cfg.eval_n} episodes each")
    rows = {"blind": _eval_row(evals["blind"]), "SFT start": _eval_row(evals["start"]),
            "after GRPO": _eval_row(evals["end"])}
    columns = list(rows["after GRPO"])
    table.add_column("policy", no_wrap=True)
    for c in columns:
        table.add_column(_SHORT.get(c, c), justify="right", no_wrap=True, min_width=len(_SHORT.get(c, c)))
    for name, row in rows.items():
        table.add_row(name, *("-" if row.get(c) is None else f"{row[c]:.2f}" for c in columns))
    console.print(table)
    return rows


_SHORT = {"read_before_edit": "read 1st", "reads_before_first_edit": "reads<edit", "first_edit_right": "edit right"}


def _results(cfg: DemoConfig, suite: Any, rows: dict[str, dict], read_uses: dict, probe: dict,
             summary: dict[str, Any], started: float) -> dict[str, Any]:
    return {
        "suite": suite.name,
        "heldout_tasks": len(suite.split("heldout")),
        "episodes_per_task": cfg.eval_n,
        "start": rows["SFT start"],
        "end": rows["after GRPO"],
        "blind": rows["blind"],
        "gain_pass@1": (rows["after GRPO"]["pass@1"] or 0) - (rows["SFT start"]["pass@1"] or 0),
        "read_use": {"start": read_uses["start"]["share"], "end": read_uses["end"]["share"],
                     "chance": 1 / len(suite.families) if suite.families else None,
                     "path_start": read_uses["start"].get("path_share"),
                     "path_end": read_uses["end"].get("path_share")},
        "probe": {k: probe.get(k) for k in ("mixed_share", "p_mixed_group", "expected_mixed", "verdict")},
        "grpo_steps": summary.get("steps"),
        "minutes": (time.time() - started) / 60,
        "quick": cfg.quick,
    }


# ----------------------------------------------------------------------------- helpers


def _write_jsonl(path: Path, trajs: list[Any]) -> None:
    """Trajectories as JSON lines, whole or not at all (a killed run redoes the file)."""
    save_jsonl(trajs, path.with_suffix(".partial")).rename(path)


def _stage(console: Any, title: str) -> None:
    console.rule(f"[bold]{title}")


def _spread(tasks: list[Any], count: int, seed: int) -> list[tuple[list[Any], int]]:
    """`count` episodes over `tasks` as evenly as can be: (tasks, episodes each) batches, every
    task `count // len(tasks)` times, then a seeded sample of them once more."""
    full, rest = divmod(count, len(tasks))
    batches = [(list(tasks), full)] if full else []
    if rest:
        batches.append((random.Random(seed).sample(list(tasks), rest), 1))
    return batches


def _eval_row(result: Any) -> dict[str, Any]:
    """The figures a reader compares: pass@k and the behaviour that explains it."""
    stats = result.overall.get("stats", {})
    row = {f"pass@{k}": result.pass_at(k) for k in result.ks}
    for key in ("reads", "edits", "tests", "turns", "read_before_edit", "reads_before_first_edit",
                "first_edit_right"):
        if key in stats:
            row[key] = stats[key]
    return row

"""`fixrl demo`: the whole of fixrl on any laptop, one stage after another.

1. load the suite (default: the built-in `gym` suite, made for small models);
2. build a tiny Qwen2-architecture policy and fine-tune it (SFT) on scripted
   demonstrations on the train split: mostly blind and random play, a small share of informed
   play (read, then the right fix) -- RL can only amplify a skill the start already shows --
   plus informed episodes whose choice to read is out of the loss: how to use a read, not when.
   SFT runs on excerpts of the informed episodes first (`harness/demo/excerpts.py`), then on them
   whole, then on them all (optionally with path excerpts, `path_copies`, in the first and last
   stage); then measure whether the start opens the issue's file and picks the right repair
   after a read (teacher-forced, `harness/demo/read_use.py`);
3. probe it: will GRPO have signal?
4. train it with GRPO;
5. evaluate start and end on the held-out split, next to the best blind policy, and write the
   report's plots and `results.json`.

Every stage writes its outputs into `--out` as it goes and is skipped when they are already
there, so a killed demo resumes where it stopped (GRPO itself resumes mid-run).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from fixrl import tasks as tasks_pkg
from fixrl.envs import EnvConfig
from fixrl.evals.probe import run_probe
from fixrl.harness.demo.read_use import read_use
from fixrl.evals.report import report
from fixrl.evals.run import EvalResult, compare, evaluate
from fixrl.harness.agent.chat import tool_choice_span
from fixrl.harness.agent.policies import ScriptedPolicy
from fixrl.harness.agent.policies.hf import HFPolicy
from fixrl.harness.agent.transcript import load_jsonl
from fixrl.harness.agent.tiny import init_tiny
from fixrl.harness.agent.rollouts import open_rollouts
from fixrl.sandbox import SandboxConfig
from fixrl.train.config import make_config
from fixrl.train.grpo import run_grpo
from fixrl.train.sft import SFTConfig, run_sft
from fixrl.tasks.suites import GYM_SUITE
from transformers.utils import logging as hf_logging


DEMO_PROMPT = ("Fix the bug. Tools: read(path), test(), edit(path, old, new), submit(). "
               "One tool call per reply; {max_turns} calls{edits}.")


@dataclass
class DemoConfig:
    out: str = "runs/demo"
    """Output directory; every stage's files go here and are reused on a rerun."""
    suite: str | None = None
    """Suite directory; None: the built-in `gym` suite."""
    sandbox: str = "local"
    """Sandbox backend: `local` (no daemon needed) or `docker`."""
    ray: str | None = None
    """Run every stage's episodes on this Ray cluster ("auto" or HOST:PORT; SandboxConfig.ray)."""
    preset: str = "octlm"
    """GRPO preset (see `fixrl grpo --help`)."""
    quick: bool = False
    """Every stage in a few minutes, with fewer steps and episodes (the tests run this)."""
    seed: int = 0
    hidden_size: int = 64
    """Width of the tiny policy (its tokenizer and chat format are Qwen2.5's)."""
    num_layers: int = 4
    """Four layers learn the tool-call format in fewer steps than two, for little more time
    (in sampling, the 151,936-token output head is most of the cost; SFT's head covers only the
    demonstrations' tokens, `SFTConfig.data_vocab_head`)."""
    demo_mix: dict[str, int] = field(default_factory=lambda: {"random": 110, "blind": 330, "oracle": 110})
    """Demonstration episodes by scripted policy, trained on whole, spread evenly over the train
    tasks (a total, not per task: a large suite costs no more time): 1 in 5 reads first and fixes
    right, the rest edit blind or act at random."""
    after_read: int = 550
    """Further informed (oracle) episodes whose choice to read (the first call up to its tool
    name) is left out of the SFT loss (`Trajectory.with_masked`): they teach how to call `read`
    and what to do with what it showed, not when to read. A tiny model learns to find the bug's
    marker in a read file only from many such examples across many functions (on 20 train
    functions it learned each one's fixes and carried nothing to held-out ones), and training on
    all their choices would make it read first most of the time, leaving GRPO nothing to learn."""
    informed_tests: bool = False
    """Informed (oracle) demonstrations run `test` between their fix and `submit`. Off: they
    read, edit and submit. The hidden check is the reward, so a test run earns the tiny policy
    nothing, and one it learns from 660 demonstrations is a pytest run in most GRPO and
    evaluation episodes: with it on, 715 of 1,100 demonstrations called `test`, which was most
    of the demonstration stage's 8-10 minutes, and GRPO's steps slowed from ~30 s to ~60 s as the
    policy took the habit up. Random play still calls it now and then."""
    system_prompt: str = DEMO_PROMPT
    """The episodes' system prompt, short: a tiny model trained from scratch learns to use its
    context (the issue's path, the marker a read showed) only when little stands between."""
    tool_schemas: bool = False
    """Leave the tools' JSON schemas (524 tokens with their preamble) out of the prompt; the
    prompt names the tools."""
    excerpt_copies: int = 3
    """Excerpts (`harness/demo/excerpts.py`) of each informed demonstration, the first SFT stage: the
    read cut to the line of the edit's `old` text and `excerpt_lines` others, then the edit. On
    whole episodes alone the tiny model never learned to use a read in 8 epochs (0.10-0.24 of
    held-out decisions, chance 0.20); after 2 epochs of excerpts and 1 of whole informed
    episodes, 0.76-0.81 in a trial on informed demonstrations alone and 0.67 in the full demo
    (README). 0: no excerpt stage."""
    path_copies: int = 1
    """Path excerpts (`harness.excerpts.path_excerpts`) of each demonstration, trained on in the
    first and the last SFT stage: its first reply with the issue's file swapped for another (half
    of them made up), only the path in the loss. Without them whether the start copies a held-out
    task's path from the issue into its first call is left to chance: seed 1 copied 0.57 (it read
    `gym/forest.py` for `gym/numbers.py`, and GRPO, whose groups on those files all failed, left
    that as it was; gain +0.24), an earlier run of the same seed 1.00; with one copy each 1.00
    (gain +0.41). SFT took 7.0-7.3 min in all with them (and the data head training only the
    data's rows), 8.5-8.8 min without them before that change. 0: none."""
    excerpt_lines: int = 3
    """Lines of the read shown in an excerpt besides the header and the edit's line."""
    sft_excerpt_epochs: int = 2
    """SFT epochs on the excerpts (about 1 minute each here)."""
    sft_informed_epochs: int = 1
    """SFT epochs on the whole informed demonstrations, after the excerpts and before the whole
    mix: the lookup learned on excerpts, in full-length contexts. 0: skip this stage."""
    sft_epochs: int = 2
    """SFT epochs on every demonstration, after the informed ones: how often to read."""
    sft_value_weight: float = 5.0
    """SFT loss weight of tool-call argument values (the path copied from the issue, the edit
    picked from a read), against 1 for the other reply tokens."""
    sft_learning_rate: float = 2e-3
    sft_batch_size: int = 4
    """Demonstrations per SFT optimizer step (more, smaller steps over the small data set)."""
    lora_rank: int = 32
    """Rank of the LoRA adapter GRPO trains on top of the SFT model."""
    lora_alpha: int = 64
    grpo_steps: int = 20
    """GRPO steps (about 30 s each here once the policy reads every time). With informed
    demonstrations that called `test`, seed 0's end scored 0.38 after 12 steps and 0.44 after 20
    (8 episodes a task): fewer steps cost gain. Stage 5 evaluates the end on the held-out split,
    so GRPO runs no evaluation of its own."""
    grpo_learning_rate: float = 4e-4
    """LoRA learning rate. At 4e-4 GRPO raises the start's reads within 20 steps (0.18 -> 0.67 an
    episode in train rollouts, means of the first and last 5 steps); 2e-4 moved an earlier start
    little in 14 steps, and 1e-3 collapsed it into malformed calls within 7."""
    eval_n: int = 8
    """Episodes per held-out task in the start and end evaluations."""
    ks: tuple[int, ...] = (1, 4, 8)
    probe_k: int = 4
    probe_tasks: int = 32
    """Train tasks the probe tries (a fixed sample; the whole split when it has fewer). 32 x 4
    attempts tell P(mixed group) to about +-0.1, enough for a go / no-go verdict."""
    pool_size: int = 24
    """Sandboxes, and so episodes in lockstep: GRPO's rollouts are 4 groups of 6."""
    temperature: float = 0.7
    """Sampling temperature of every rollout (probe, GRPO, evaluations). At 1.0 the tiny model's
    long tail (150k tokens it never saw in training) breaks about one tool call in two."""
    sft_micro_batch_size: int = 4
    """Demonstrations per forward/backward in SFT (they are of similar length: little padding)."""
    max_new_tokens: int = 96
    grpo_overrides: dict[str, Any] = field(default_factory=lambda: {"max_group_tries": 8})
    """GRPOConfig fields set on top of the preset (e.g. num_generations, max_group_tries); half
    the preset's 16 tries keeps a step of a start with little signal to about 20 s here."""

    def __post_init__(self) -> None:
        counts = [(f"demo_mix[{k!r}]", v) for k, v in self.demo_mix.items()] + [
            ("after_read", self.after_read), ("sft_informed_epochs", self.sft_informed_epochs)]
        for name, value in counts:
            if value < 0:
                raise ValueError(f"DemoConfig.{name} must be >= 0, got {value}")
        for name in ("excerpt_copies", "excerpt_lines", "sft_excerpt_epochs", "path_copies"):
            if getattr(self, name) < 0:
                raise ValueError(f"DemoConfig.{name} must be >= 0, got {getattr(self, name)}")
        informed_stages = self.sft_informed_epochs or (self.excerpt_copies and self.sft_excerpt_epochs)
        if informed_stages and not (self.demo_mix.get("oracle") or self.after_read):
            raise ValueError("DemoConfig.sft_informed_epochs and excerpt_copies need informed demonstrations "
                             "(demo_mix['oracle'] or after_read > 0); set both to 0 to train on the mix only")
        if self.probe_tasks < 1:
            raise ValueError(f"DemoConfig.probe_tasks must be >= 1, got {self.probe_tasks}")
        if self.quick:
            self.demo_mix, self.after_read = {"random": 8, "blind": 8, "oracle": 8}, 16
            self.probe_tasks = 8
            self.sft_epochs, self.grpo_steps, self.eval_n, self.probe_k = 1, 2, 2, 2
            self.sft_informed_epochs = min(self.sft_informed_epochs, 1)
            self.excerpt_copies, self.sft_excerpt_epochs = min(self.excerpt_copies, 1), min(self.sft_excerpt_epochs, 1)
            self.path_copies = min(self.path_copies, 1)
            self.ks = (1, 2)
            self.hidden_size, self.num_layers = min(self.hidden_size, 64), min(self.num_layers, 2)
            self.max_new_tokens, self.pool_size = 48, 8
            self.grpo_overrides = {**self.grpo_overrides, "num_generations": 2, "min_mixed_groups": 1,
                                   "max_group_tries": 4}


def _write_jsonl(path: Path, trajs: list[Any]) -> None:
    """Trajectories as JSON lines, whole or not at all (a killed run redoes the file)."""
    from fixrl.harness.agent.transcript import save_jsonl

    save_jsonl(trajs, path.with_suffix(".partial")).rename(path)


def _stage(console: Any, title: str) -> None:
    console.rule(f"[bold]{title}")


def _spread(tasks: list[Any], count: int, seed: int) -> list[tuple[list[Any], int]]:
    """`count` episodes over `tasks` as evenly as can be: (tasks, episodes each) batches, every
    task `count // len(tasks)` times, then a seeded sample of them once more."""
    import random

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


def run_demo(cfg: DemoConfig, console: Any = None) -> dict[str, Any]:
    hf_logging.disable_progress_bar()
    console = console or Console()
    started = time.time()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "demo_config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2))

    # 1. the suite: renaming on, so a function's name says nothing about its fix
    _stage(console, "1/5 suite")
    suite_dir = Path(cfg.suite) if cfg.suite else GYM_SUITE
    suite = tasks_pkg.load_suite(suite_dir)
    train_tasks, heldout = suite.split("train"), suite.split("heldout")
    env_config = EnvConfig(rename=True, system_prompt=cfg.system_prompt, tool_schemas=cfg.tool_schemas)
    console.print(f"suite {suite.name}: {len(train_tasks)} train, {len(heldout)} held-out tasks; "
                  f"families {', '.join(suite.families)}; tools {', '.join(suite.tools)}")
    # One set of sandboxes for every stage's episodes but GRPO's (a run of its own).
    stack = contextlib.ExitStack()
    rollouts = stack.enter_context(open_rollouts(suite, env_config, SandboxConfig(backend=cfg.sandbox,
                                                                                 pool_size=cfg.pool_size,
                                                                                 ray=cfg.ray)))
    with stack:
        return _run_stages(cfg, console, started, out, suite_dir, suite, rollouts)


def _run_stages(cfg: DemoConfig, console: Any, started: float, out: Path, suite_dir: Path, suite: Any,
                rollouts: Any) -> dict[str, Any]:
    train_tasks, heldout = suite.split("train"), suite.split("heldout")

    # 2. the tiny policy and its SFT adapter from scripted demonstrations
    _stage(console, "2/5 tiny policy, demonstrations, SFT")
    model = out / "model"
    if not (model / "config.json").exists():
        init_tiny(model, hidden_size=cfg.hidden_size, num_layers=cfg.num_layers,
                  intermediate_size=2 * cfg.hidden_size, seed=cfg.seed)
    demos, informed = out / "demos.jsonl", out / "demos_informed.jsonl"
    if not demos.exists():
        partial, informed_partial = demos.with_suffix(".partial"), informed.with_suffix(".partial")
        plan = [(kind, sets, False) for kind, sets in cfg.demo_mix.items()]
        plan += [("oracle", cfg.after_read, True)] if cfg.after_read else []
        with open(partial, "w") as f, open(informed_partial, "w") as f_informed:
            for i, (kind, count, read_masked) in enumerate(plan):
                policy = ScriptedPolicy(kind, seed=cfg.seed + i, run_tests=cfg.informed_tests)
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
    # A LoRA on random weights learns next to nothing (frozen random embeddings and head), so
    # the tiny model's SFT trains every weight; GRPO then trains a LoRA adapter on top of it, the
    # set-up a real user has with an SFT'd Qwen2.5 checkpoint.
    # First excerpts of the informed demonstrations (where to look in a read), then the informed
    # demonstrations whole (the same in full-length contexts), then the whole mix (how often to
    # read): see `excerpt_copies` and `sft_informed_epochs`.
    excerpt_file, path_file = out / "demos_excerpts.jsonl", out / "demos_paths.jsonl"
    if cfg.excerpt_copies and cfg.sft_excerpt_epochs and not excerpt_file.exists():
        from transformers import AutoTokenizer

        from fixrl.harness.demo.excerpts import excerpts

        trajs = load_jsonl(informed)
        cuts = excerpts(trajs, AutoTokenizer.from_pretrained(model), cfg.excerpt_copies, cfg.excerpt_lines, cfg.seed + 9)
        _write_jsonl(excerpt_file, cuts)
        console.print(f"  excerpts: {len(cuts)} of {len(trajs)} informed demonstrations")
    if cfg.path_copies and not path_file.exists():
        from transformers import AutoTokenizer

        from fixrl.harness.demo.excerpts import path_excerpts

        trajs = load_jsonl(demos)
        cuts = path_excerpts(trajs, AutoTokenizer.from_pretrained(model), cfg.path_copies, cfg.seed + 11)
        _write_jsonl(path_file, cuts)
        console.print(f"  path excerpts: {len(cuts)} of {len(trajs)} demonstrations")
    paths = [path_file] if cfg.path_copies else []
    sft_plan = [([excerpt_file, *paths], out / "sft_excerpts", cfg.sft_excerpt_epochs if cfg.excerpt_copies else 0),
                ([informed], out / "sft_informed", cfg.sft_informed_epochs),
                ([demos, *paths], out / "sft_model", cfg.sft_epochs)]
    stages, start_from = [], model
    for data, dest, epochs in sft_plan:
        if epochs:
            stages.append((start_from, data, dest, epochs))
            start_from = dest
    sft_model = out / "sft_model"
    every_file = {f for data, _, _ in sft_plan for f in data}
    for start_from, data, dest, epochs in stages:
        if not (dest / "config.json").exists():
            run_sft(SFTConfig(model=str(start_from), data=[str(d) for d in data], out=str(dest), epochs=epochs,
                              learning_rate=cfg.sft_learning_rate, full_finetune=True, seed=cfg.seed,
                              micro_batch_size=cfg.sft_micro_batch_size, batch_size=cfg.sft_batch_size,
                              data_vocab_head=True, value_weight=cfg.sft_value_weight,
                              head_vocab_data=sorted(str(f) for f in every_file - set(data) if f.exists())),
                    console=console)

    def load(adapter: Path | None) -> Any:
        return HFPolicy(sft_model, adapter=adapter, temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens)

    # Does the start pick the right repair after a read? Scored on scripted informed episodes of
    # the held-out tasks (measurement only; nothing trains on them), teacher-forced.
    informed_heldout = out / "read_use_episodes.jsonl"
    if not informed_heldout.exists():
        oracle = ScriptedPolicy("oracle", seed=cfg.seed + 5, run_tests=cfg.informed_tests)
        trajs = rollouts.run(oracle, heldout, 1, cfg.seed + 5)
        _write_jsonl(informed_heldout, [t for t in trajs if not t.errored])
    informed_trajs = load_jsonl(informed_heldout)
    family_of = {t.id: t.family for t in heldout}

    def measure_read_use(policy: Any) -> dict[str, Any]:
        result = read_use(policy.model, policy.tokenizer, informed_trajs, family_of)
        console.print(result.to_text())
        return result.to_dict()

    def held_out_eval(name: str, policy: Any, step: int = 0) -> Any:
        """Reused on a rerun unless it scored another GRPO step (a rerun that trained on); the
        step is recorded with the policy in the evaluation's results.json."""
        dest = out / f"eval_{name}"
        if (dest / "results.json").exists():
            done = EvalResult.load(dest)
            if done.policy.get("grpo_step", 0) == step:
                return done
        return evaluate(policy, suite, split="heldout", n=cfg.eval_n, ks=cfg.ks, seed=cfg.seed + 7, out=dest,
                        rollouts=rollouts, policy_info={"name": f"demo {name}", "kind": "object", "grpo_step": step})

    read_use_file = out / "read_use.json"
    read_uses = json.loads(read_use_file.read_text()) if read_use_file.exists() else {}
    if "start" not in read_uses:
        read_uses["start"] = measure_read_use(load(None))
        read_use_file.write_text(json.dumps(read_uses, indent=2))

    # 3. the probe: does the start pass some attempts and fail others on the train tasks?
    _stage(console, "3/5 probe")
    probe_file = out / "probe.json"
    if probe_file.exists():
        probe = json.loads(probe_file.read_text())
    else:
        sample = _spread(train_tasks, min(cfg.probe_tasks, len(train_tasks)), cfg.seed + 3)[0][0]
        result = run_probe(load(None), suite, split="train", k=cfg.probe_k, seed=cfg.seed + 3,
                           rollouts=rollouts, task_ids=[t.id for t in sample])
        console.print(result.to_text())
        probe = result.to_dict()
        probe_file.write_text(json.dumps(probe, indent=2))

    # 4. GRPO from the SFT adapter
    _stage(console, f"4/5 GRPO ({cfg.preset}, {cfg.grpo_steps} steps)")
    run_dir = out / "grpo"
    grpo_cfg = make_config(cfg.preset, model=str(sft_model), adapter=None,
                           lora_rank=cfg.lora_rank, lora_alpha=cfg.lora_alpha, suite=str(suite_dir),
                           out=str(run_dir), steps=cfg.grpo_steps, learning_rate=cfg.grpo_learning_rate,
                           backend=cfg.sandbox, ray=cfg.ray, rename=True, seed=cfg.seed, pool_size=cfg.pool_size,
                           max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                           eval_every=0, system_prompt=cfg.system_prompt,
                           tool_schemas=cfg.tool_schemas, **cfg.grpo_overrides)
    # A rerun with more steps than the run has done trains on from its last checkpoint; with as
    # many or fewer it trains no more (a checkpoint is never rolled back).
    resume = (run_dir / "checkpoint").exists()
    summary = run_grpo(grpo_cfg, resume=resume, overrides={"steps": cfg.grpo_steps} if resume else None,
                       console=console)

    # 5. start against end on held-out tasks, next to the best blind policy
    _stage(console, "5/5 held-out evaluation")
    blind = held_out_eval("blind", "blind")
    start = held_out_eval("start", load(None))
    end_policy = load(Path(summary["adapter"]))
    end = held_out_eval("end", end_policy, step=summary["steps"])
    if read_uses.get("end", {}).get("grpo_step") != summary["steps"]:
        read_uses["end"] = {**measure_read_use(end_policy), "grpo_step": summary["steps"]}
        read_use_file.write_text(json.dumps(read_uses, indent=2))
    comparison = compare(start, end)
    report_md = report(run_dir)
    for dest in (out / "eval_start", out / "eval_end"):
        report(dest)  # per-task pass charts of both ends, `eval_*/report/`

    table = Table(title=f"held-out tasks ({len(heldout)}), {cfg.eval_n} episodes each")
    rows = {"blind": _eval_row(blind), "SFT start": _eval_row(start), "after GRPO": _eval_row(end)}
    columns = list(rows["after GRPO"])
    short = {"read_before_edit": "read 1st", "reads_before_first_edit": "reads<edit",
             "first_edit_right": "edit right"}
    table.add_column("policy", no_wrap=True)
    for c in columns:
        table.add_column(short.get(c, c), justify="right")
    for name, row in rows.items():
        table.add_row(name, *("-" if row.get(c) is None else f"{row[c]:.2f}" for c in columns))
    console.print(table)
    console.print(comparison.to_text() if hasattr(comparison, "to_text") else str(comparison))

    results = {
        "suite": suite.name,
        "heldout_tasks": len(heldout),
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
    (out / "results.json").write_text(json.dumps(results, indent=2))
    console.print(f"results: {out / 'results.json'}  report: {report_md}  "
                  f"({results['minutes']:.1f} min)")
    return results

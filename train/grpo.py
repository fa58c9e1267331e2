"""`fixrl grpo`: one GRPO job, top to bottom.

    run_grpo
      start      the run directory (new or resumed), the suite, the model, the resolved config
      for step in steps:
        sample     groups of G episodes (dynamic sampling: until enough groups are mixed)
        advantages one per episode from its group's rewards, shared by all its tokens
        loss       over the tokens the policy sampled in every assistant turn, nothing else
        backward   one forward per trajectory (checkpointed blocks, chunked output head)
        clip, step (num_iterations x steps_per_generation optimizer steps; one on-policy by default)
        log        metrics.jsonl, TensorBoard, trajectories; eval and checkpoint on schedule
      finish     the last checkpoint (also on Ctrl-C)

The policy that samples is the model being trained (HFPolicy wraps the same object), so every
rollout is on-policy; or, with `engine="vllm"`, a vLLM server that loads the LoRA adapter after
every update (`train.engine`: the adapter, not the weights; its log-probs differ from the
trainer's by kernels and precision, so their gap is logged and truncated importance sampling
corrects for it). A run directory holds:

    config.json                 the resolved config (`train.resolve.RunConfig`: every field,
                                after the preset, derived values filled in)
    metrics.jsonl               one JSON line per step
    trajectories/step_*.jsonl.gz every sampled episode (kept or not, with its advantage)
    evals/step_*/               held-out evaluations (results.json as `fixrl eval` writes it)
    checkpoint/                 the latest resumable state: adapter (peft format) or model,
                                trainer_state.pt (optimizer, scheduler, scaler, RNG states, step),
                                sampler.json (data order, task memory), config.json
    adapter/                    the latest adapter alone (peft format), for `--adapter`
    vllm-adapters/step_*/       engine vllm: the adapters the server loaded (the last two)
    tb/                         TensorBoard events

Resuming (`--resume`) restores all of it: on CPU with the same seed the resumed steps equal the
uninterrupted run's (tests/train/test_grpo.py). What it does not guarantee: equality when the
sandbox pool is smaller than a rollout call's episodes (episodes then start as sandboxes free
up, and the batches the model generates in depend on timing), or across torch versions.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import signal
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, TypedDict

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from fixrl import tasks as tasks_pkg
from fixrl.evals.run import evaluate
from fixrl.harness.agent.policies import Policy, TimedPolicy, close_policy
from fixrl.harness.agent.rollouts import Rollouts, open_rollouts
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.tasks import Suite, Task
from fixrl.train.advantages import compute_advantages, overlong_shaping
from fixrl.train.batch import SampleBatch
from fixrl.train.config import GRPOConfig, Precision
from fixrl.train.engine import sampler_logprobs, sampler_policy, sync_adapter, tis_weights
from fixrl.train.errors import RunError
from fixrl.train.logprobs import reply_log_probs
from fixrl.train.losses import LossStats, policy_loss
from fixrl.train.model import Reference, check_adapter_dir, is_peft, load_trainable, trainable_parameters
from fixrl.train.precision import mixed_precision, optimizer_step, restore_scaler
from fixrl.train.resolve import RESUMABLE_OVERRIDES, RunConfig, dotted_names, load_config, resolve
from fixrl.train.rundir import (
    CHECKPOINT,
    Metrics,
    RunLog,
    Snapshot,
    preserved_rng,
    rng_state,
    save_checkpoint,
    seed_all,
    set_rng_state,
)
from fixrl.train.sampler import DynamicSampler
from fixrl.train.sft import lr_factor, pad_batch

log = logging.getLogger(__name__)

Overrides = dict[str, object]
"""Config fields given with --resume (nested ones as dicts), in any name `train.resolve` knows."""


class RunSummary(TypedDict, total=False):
    """What `run_grpo` returns (the command line prints it)."""

    out: str
    start_step: int
    last: Metrics
    steps: int
    seconds: float
    adapter: str


# ============================================================================= the job


def run_grpo(cfg: GRPOConfig, resume: bool = False, overrides: Overrides | None = None,
             console: Console | None = None) -> RunSummary:
    """Train; returns a summary. `overrides` (with resume) may change only RESUMABLE_OVERRIDES."""
    job = start(cfg, resume, overrides)
    try:
        return _train(job, console)
    finally:
        close_policy(job.policy)  # a vLLM server started for the run stops with it (Ctrl-C too)


def _train(job: Job, console: Console | None) -> RunSummary:
    run = job.run
    summary: RunSummary = {"out": str(Path(run.out)), "start_step": job.start_step}
    started = time.time()
    try:
        with open_rollouts(job.suite, run.env, run.sandbox, run.cluster,
                           max_total_tokens=run.max_total_tokens) as rollouts, \
                _Display(console, run.max_steps, job.start_step) as display:
            eval_rollouts = rollouts.with_env(dataclasses.replace(run.env, reward="hidden"))
            for this in range(job.start_step + 1, run.max_steps + 1):
                summary["last"] = train_step(job, this, rollouts, eval_rollouts, display)
    except KeyboardInterrupt:
        log.warning("interrupted: saving the checkpoint of step %d", job.state.step)
        finish(job, interrupted=True)
        raise
    finish(job, interrupted=False)
    summary.update(steps=job.state.step, seconds=time.time() - started,
                   adapter=str(Path(run.out) / "adapter") if is_peft(job.learner.model)
                   else str(Path(run.out) / CHECKPOINT / "model"))
    return summary


@dataclass
class Job:
    """Everything one run holds between its steps."""

    run: RunConfig
    start_step: int
    suite: Suite
    do_eval: bool
    learner: Learner
    sampler: DynamicSampler
    policy: TimedPolicy
    runlog: RunLog
    state: RunState


def start(cfg: GRPOConfig, resume: bool, overrides: Overrides | None) -> Job:
    """Check the run directory, load the suite and the model (a checkpoint's when resuming),
    resolve the config once -- its precision is the device's to settle -- and record it."""
    check_overrides(overrides)
    cfg, start_step = prepare_run(cfg, resume, overrides)
    seed_all(cfg.seed)
    suite, train_tasks, do_eval = load_run_suite(cfg)
    learner = load_learner(cfg, start_step)
    run = resolve(cfg, precision=learner.precision)
    out = Path(run.out)
    out.mkdir(parents=True, exist_ok=True)
    run.save(out / "config.json")
    log.info("GRPO run in %s from step %d: %s", out, start_step, json.dumps(run.to_dict(), sort_keys=True))
    sampler = DynamicSampler.from_config(train_tasks, run)
    if start_step:
        restore(learner, sampler, out / CHECKPOINT)
    policy = sampler_policy(run, learner)
    try:
        sync_adapter(policy, learner, out, start_step)
    except BaseException:
        close_policy(policy)
        raise
    return Job(run, start_step, suite, do_eval, learner, sampler, policy, RunLog(out, run, start_step),
               RunState(out, run, learner, start_step, sampler))


def train_step(job: Job, this: int, rollouts: Rollouts, eval_rollouts: Rollouts, display: _Display) -> Metrics:
    """Step `this`: sample and update, then its trajectories, evaluation, metrics and checkpoint."""
    run = job.run
    t_step = time.perf_counter()
    display.describe(f"step {this}: sampling and training")
    row, batch = sample_and_update(job, this, rollouts)
    if run.keep_trajectories:
        job.runlog.trajectories(this, batch)
    if job.do_eval and (this % run.eval_steps == 0 or this == run.max_steps):
        display.describe(f"step {this}: held-out eval")
        t0 = time.perf_counter()
        with preserved_rng():
            row.update(heldout_eval(job.policy, job.suite, run, eval_rollouts, this))
        row["time/eval"] = time.perf_counter() - t0
    row["time/step"] = time.perf_counter() - t_step
    job.runlog.write(row)
    job.state.pending = None
    if run.save_steps and this % run.save_steps == 0:
        with deferred_interrupt():
            job.state.checkpoint()
    display.stepped(row, run.max_steps)
    return row


def finish(job: Job, interrupted: bool) -> None:
    """The last checkpoint (unless the last step's is written); after Ctrl-C, also the metrics
    row of a step interrupted in its evaluation."""
    with deferred_interrupt():
        if interrupted and job.state.pending is not None:
            job.runlog.write(job.state.pending)
        job.state.checkpoint_if_new()
    job.runlog.close()


# ============================================================================= starting a run


def check_overrides(overrides: Overrides | None) -> None:
    bad = sorted(set(dotted_names(overrides or {})) - set(RESUMABLE_OVERRIDES))
    if bad:
        raise RunError(f"--resume continues the run as it was started; it cannot change {', '.join(bad)} "
                       f"(only {', '.join(RESUMABLE_OVERRIDES)})")


def prepare_run(cfg: GRPOConfig, resume: bool, overrides: Overrides | None = None) -> tuple[GRPOConfig, int]:
    """(config to run with, step of the checkpoint to resume from or 0). Writes nothing."""
    out = Path(cfg.out)
    if not resume:
        if (out / CHECKPOINT).exists() or (out / "metrics.jsonl").exists():
            raise RunError(f"{out} already holds a run: pass --resume to continue it, or choose a new --out")
        return cfg, 0
    ckpt = out / CHECKPOINT
    if not (ckpt / "trainer_state.pt").exists():
        raise RunError(f"--resume: {out} has no checkpoint ({ckpt}/trainer_state.pt); start a new run without "
                       "--resume")
    saved = load_config(ckpt / "config.json", **{**(overrides or {}), "out": str(out)})
    state = torch.load(ckpt / "trainer_state.pt", map_location="cpu", weights_only=False)
    return saved, int(state["step"])


def load_run_suite(cfg: GRPOConfig) -> tuple[Suite, list[Task], bool]:
    """(suite, its training tasks, whether the held-out evaluation runs)."""
    try:
        suite = tasks_pkg.load_suite(Path(cfg.suite))
    except (OSError, ValueError) as e:
        raise RunError(f"--suite {cfg.suite}: {e}") from e
    train_tasks = suite.split(cfg.split)
    if not train_tasks:
        raise RunError(f"suite {suite.name!r} has no tasks in split {cfg.split!r} (--split)")
    do_eval = cfg.eval_steps > 0 and bool(suite.split(cfg.eval_split))
    if cfg.eval_steps > 0 and not do_eval:
        # Said on stderr before the run starts: a run that trains for hours without the held-out
        # curve it was meant to draw should not be the first place a user learns this.
        have = ", ".join(sorted({t.split for t in suite.tasks}))
        log.warning("suite %r has no tasks in split %r (its splits: %s): held-out evaluation is OFF for this run; "
                    "give --eval-split SPLIT to evaluate on another split, mark some tasks `split: heldout` in "
                    "their task files, or --eval-steps 0 to turn it off knowingly", suite.name, cfg.eval_split, have)
    return suite, train_tasks, do_eval


def load_learner(cfg: GRPOConfig, start_step: int) -> Learner:
    """The model to train (from the run's checkpoint when resuming) with a fresh optimizer,
    scheduler, scaler and KL reference; `restore` then loads a checkpoint's state into them."""
    ckpt = Path(cfg.out) / CHECKPOINT
    if start_step:
        weights = ckpt / "adapter"
        source, adapter = (cfg.model, weights) if weights.exists() else (ckpt / "model", None)
    else:
        if cfg.adapter is not None:
            check_adapter_dir(cfg.adapter)
        source, adapter = cfg.model, cfg.adapter
    model, tok = load_trainable(source, adapter, cfg, cfg.device, cfg.precision)
    amp = mixed_precision(cfg.precision, next(model.parameters()).device)
    reference = kl_reference(cfg, model, start_step)
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, cfg.max_steps, cfg.warmup_steps, "constant"))
    return Learner(model, tok, optimizer, scheduler, amp.grad_scaler(), reference, amp.precision)


def kl_reference(cfg: GRPOConfig, model: torch.nn.Module, start_step: int) -> Reference | None:
    """The KL reference (beta > 0): the base weights under a new adapter, or the starting adapter,
    saved once in the run directory so a resumed run compares with the same one."""
    if cfg.beta <= 0:
        return None
    if cfg.adapter is None:
        return Reference(model, "base")
    ref_file = Path(cfg.out) / "reference_adapter.pt"
    if start_step:
        device = next(model.parameters()).device
        return Reference(model, "adapter", torch.load(ref_file, map_location=device))
    reference = Reference(model, "adapter")
    ref_file.parent.mkdir(parents=True, exist_ok=True)
    torch.save(reference.weights, ref_file)
    return reference


def restore(learner: Learner, sampler: DynamicSampler, ckpt: Path) -> None:
    """Load a checkpoint's optimizer, scheduler, scaler, sampler and RNG states."""
    state = torch.load(ckpt / "trainer_state.pt", map_location="cpu", weights_only=False)
    learner.optimizer.load_state_dict(state["optimizer"])
    learner.scheduler.load_state_dict(state["scheduler"])
    restore_scaler(learner.scaler, state["scaler"])
    try:
        sampler.load_state_dict(json.loads((ckpt / "sampler.json").read_text()))
    except ValueError as e:
        raise RunError(f"--resume: {e}") from e
    set_rng_state(state["rng"])


# ============================================================================= one step


def sample_and_update(job: Job, this: int, rollouts: Rollouts) -> tuple[Metrics, SampleBatch]:
    """One step's sampling and update: (metrics row, the sampled batch, its kept groups carrying
    their advantages). The update and the run's record of it run with Ctrl-C deferred, so
    neither is half done."""
    run, learner, policy = job.run, job.learner, job.policy

    def rollout(task_list: list[Task], call_index: int) -> list[Trajectory]:
        return rollouts.run(policy, task_list, run.num_generations, mix_seed(run.seed, this, call_index))

    policy.seconds = 0.0
    t0 = time.perf_counter()
    batch = job.sampler.sample(rollout)
    row: Metrics = {"step": this, **rollout_metrics(batch)}
    row["time/rollout"] = time.perf_counter() - t0
    row["time/generation"] = policy.seconds
    t0 = time.perf_counter()
    with deferred_interrupt():
        if batch.kept:
            m, adv = grpo_update(learner, batch.kept, run, this)
            row.update(m)
            batch.set_advantages(adv)
        else:
            row["train/episodes"] = 0
        version = sync_adapter(policy, learner, Path(run.out), this)
        if version is not None:
            row["engine/adapter_version"] = int(version.rsplit("-", 1)[-1])
        job.state.stepped(this, job.sampler, row)
    row["time/training"] = time.perf_counter() - t0
    row.setdefault("lr", learner.scheduler.get_last_lr()[0])
    return row, batch


def rollout_metrics(batch: SampleBatch) -> Metrics:
    """What the policy did in every episode sampled for this step (kept or not)."""
    sampled = batch.sampled
    scored = [t for t in sampled if t.info.outcome != "error"]
    passing = [t for t in scored if t.info.outcome == "pass"]
    failing = [t for t in scored if t.info.outcome != "pass"]
    tried = max(batch.groups_tried, 1)
    m: Metrics = {
        "rollout/episodes": len(sampled),
        "rollout/errors": len(sampled) - len(scored),
        "rollout/reward": _mean([float(t.reward) for t in scored]),
        "rollout/pass_rate": _mean([1.0 if t.info.outcome == "pass" else 0.0 for t in scored]),
        "groups/tried": batch.groups_tried,
        "groups/kept": len(batch.kept),
        "groups/wanted": batch.wanted,
        "groups/short": int(batch.short),
        "groups/too_small": batch.too_small,
        "zero_adv_frac": (batch.all_pass + batch.all_fail) / tried,
        "zero_adv_frac/all_pass": batch.all_pass / tried,
        "zero_adv_frac/all_fail": batch.all_fail / tried,
        "sampler/rollout_calls": batch.rollout_calls,
        "sampler/skipped_solved": batch.skipped["solved"],
        "sampler/skipped_hopeless": batch.skipped["hopeless"],
        "policy_tokens": _mean([float(t.num_policy_tokens) for t in scored]),
        "policy_tokens/pass": _mean([float(t.num_policy_tokens) for t in passing]),
        "policy_tokens/fail": _mean([float(t.num_policy_tokens) for t in failing]),
    }
    for key in ("reads", "tests", "edits", "turns", "malformed"):
        m[f"rollout/{key}"] = _mean([float(getattr(t.info, key) or 0) for t in scored])
    m.update(_exit_shares(sampled))
    m["time/tools"] = sum(float(t.info.seconds.get("tools", 0.0)) for t in sampled)
    m["time/checks"] = sum(float(t.info.seconds.get("check", 0.0)) for t in sampled)
    return m


def _exit_shares(sampled: list[Trajectory]) -> Metrics:
    """The share of episodes that ended each way (the usual ways always present, 0 or not)."""
    statuses: dict[str, int] = {}
    for t in sampled:
        s = t.info.exit_status or "unknown"
        statuses[s] = statuses.get(s, 0) + 1
    m: Metrics = {}
    for s in ("submitted", "out_of_turns", "out_of_tokens", "malformed", "error"):
        m[f"exit/{s}"] = statuses.pop(s, 0) / max(len(sampled), 1)
    for s, n in statuses.items():
        m[f"exit/{s}"] = n / max(len(sampled), 1)
    return m


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


# ============================================================================= the update


@dataclass
class Learner:
    """What a run trains and the state of its optimisation (all of it saved in a checkpoint)."""

    model: torch.nn.Module
    tokenizer: PreTrainedTokenizerBase
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler
    """Enabled for fp16 only (a disabled one passes through)."""
    reference: Reference | None
    """The KL reference, or None when beta is 0."""
    precision: Precision = "fp32"
    """The resolved precision setting (`train.precision`)."""

    @property
    def pad_id(self) -> int:
        return self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0


@dataclass
class _Item:
    """One trajectory the update trains on, with what its loss compares against."""

    traj: Trajectory
    advantage: float
    old_logp: Tensor | None = None
    """[T'] the trainer's log-probs before any update (several updates per batch only)."""
    ref_logp: Tensor | None = None
    """[T'] the reference policy's log-probs (beta > 0 only)."""


def grpo_update(learner: Learner, groups: Sequence[Sequence[Trajectory]], cfg: RunConfig,
                step: int) -> tuple[Metrics, list[float]]:
    """Advantages, then num_iterations x steps_per_generation clipped optimizer steps on the kept
    groups (each the scored episodes of one task). Returns (metrics, the advantage of each
    trajectory in `groups` order)."""
    adv_list = episode_advantages(groups, cfg)
    trajs = [t for g in groups for t in g]
    # Episodes without policy tokens cannot be trained on; zero-advantage ones with no KL term
    # contribute exactly nothing but their tokens to the normaliser, so they skip the forward.
    items = [_Item(t, a) for t, a in zip(trajs, adv_list) if t.num_policy_tokens > 0]
    m: Metrics = {"train/episodes": len(items),
                  "train/policy_tokens": sum(it.traj.num_policy_tokens for it in items),
                  "train/adv_abs_mean": _mean([abs(it.advantage) for it in items])}
    if not items:
        return m, adv_list
    learner.model.train()
    _before_updates(learner, cfg, items)
    gen = torch.Generator().manual_seed(mix_seed(cfg.seed, step, "minibatches"))
    stats, entropy, gaps = LossStats(), [0.0, 0], _GapStats()
    steps: list[tuple[float, float | None]] = []  # (loss, grad norm or None when skipped) per step
    for iteration in range(cfg.num_iterations):
        order = torch.randperm(len(items), generator=gen) if cfg.steps_per_generation > 1 else torch.arange(len(items))
        for mb in order.chunk(cfg.steps_per_generation):
            done = _minibatch_step(learner, cfg, [items[k] for k in mb.tolist()], iteration == 0, stats, entropy,
                                   gaps)
            if done is not None:
                steps.append(done)
    m.update(stats.means())
    taken = [g for _, g in steps if g is not None]
    m.update({"loss/policy": _mean([x for x, _ in steps]), "entropy": entropy[0] / entropy[1] if entropy[1] else None,
              "grad_norm": _mean(taken), "lr": learner.scheduler.get_last_lr()[0],
              "train/optimizer_steps": len(taken), "train/skipped_steps": len(steps) - len(taken)})
    if learner.scaler.is_enabled():
        m["train/loss_scale"] = float(learner.scaler.get_scale())
    m.update(gaps.means())
    return m, adv_list


@dataclass
class _GapStats:
    """Trainer vs engine log-probs on the first pass over a batch (engine vllm only)."""

    tokens: float = 0.0
    gap_abs_sum: float = 0.0
    gap_max: float = 0.0
    capped: float = 0.0

    def add(self, s: dict[str, float]) -> None:
        self.tokens += s["tokens"]
        self.gap_abs_sum += s["gap_abs_sum"]
        self.gap_max = max(self.gap_max, s["gap_max"])
        self.capped += s["capped"]

    def means(self) -> Metrics:
        if not self.tokens:
            return {}
        return {"engine/logp_gap": self.gap_abs_sum / self.tokens, "engine/logp_gap_max": self.gap_max,
                "engine/is_capped_frac": self.capped / self.tokens}


def episode_advantages(groups: Sequence[Sequence[Trajectory]], cfg: RunConfig) -> list[float]:
    """One advantage per trajectory of `groups` (in order), from its group's shaped rewards."""
    trajs = [t for g in groups for t in g]
    group_ids = torch.tensor([i for i, g in enumerate(groups) for _ in g])  # [N]
    rewards = torch.tensor([float(t.reward) for t in trajs])  # [N]
    turns = torch.tensor([float(t.info.turns or 0) for t in trajs])  # [N]
    shaped = overlong_shaping(rewards, turns, cfg.max_turns or 0, cfg.overlong_buffer)  # [N]
    return compute_advantages(shaped, group_ids, cfg.scale_rewards, cfg.baseline).tolist()  # [N]


def _before_updates(learner: Learner, cfg: RunConfig, items: list[_Item]) -> None:
    """pi_old (several updates per batch) and pi_ref (beta > 0), by the trainer's own forward,
    before any update."""
    for i in range(0, len(items), cfg.micro_batch_size):
        chunk = items[i:i + cfg.micro_batch_size]
        if cfg.needs_old_logprobs:
            lp, _, _ = _forward(learner, cfg, chunk, grad=False)
            for it, row in zip(chunk, lp):
                it.old_logp = row
        if learner.reference is not None:
            with learner.reference.active():
                lp, _, _ = _forward(learner, cfg, chunk, grad=False)
            for it, row in zip(chunk, lp):
                it.ref_logp = row


def _minibatch_step(learner: Learner, cfg: RunConfig, batch: list[_Item], first_pass: bool,
                    stats: LossStats, entropy: list[float],
                    gaps: _GapStats | None = None) -> tuple[float, float | None] | None:
    """One optimizer step on a minibatch: (its loss, the gradient norm before clipping; None when
    the step was skipped for inf/nan gradients), or None when nothing in it can learn. Adds to
    `stats` and to `entropy` ([sum, tokens], first pass)."""
    kl_on = learner.reference is not None
    train = [it for it in batch if it.advantage != 0.0 or kl_on]
    if not train:  # nothing to learn here (and GradScaler.step needs a backward first)
        return None
    tokens = sum(it.traj.num_policy_tokens for it in batch)
    micro = [train[i:i + cfg.micro_batch_size] for i in range(0, len(train), cfg.micro_batch_size)]
    learner.optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for chunk in micro:
        logp, ent, mask = _forward(learner, cfg, chunk, grad=True, entropy=first_pass)
        width = logp.shape[1]
        old = _stacked([it.old_logp for it in chunk], width) if cfg.needs_old_logprobs else logp.detach()
        ref = _stacked([it.ref_logp for it in chunk], width) if kl_on else None
        adv = torch.tensor([it.advantage for it in chunk], device=logp.device)
        weights = None
        if cfg.engine == "vllm":
            # The engine sampled with other numerics (and kernels) than this forward: TIS.
            weights, gap = tis_weights(old, sampler_logprobs([it.traj for it in chunk], width, logp.device), mask,
                                       cfg.vllm_importance_sampling_cap)
            if first_pass and gaps is not None:
                gaps.add(gap)
            if not cfg.vllm_importance_sampling_correction:
                weights = None
        loss, st = policy_loss(logp, old, adv, mask, loss_type=cfg.loss_type, epsilon=cfg.epsilon,
                               epsilon_high=cfg.epsilon_high, level=cfg.importance_sampling_level,
                               ref_logp=ref, beta=cfg.beta, kl_estimator=cfg.kl_estimator,
                               num_seqs=len(batch), num_tokens=tokens, constant=cfg.loss_constant,
                               micro_batches=len(micro), is_weights=weights)
        learner.scaler.scale(loss).backward()
        total += float(loss.detach())
        stats.add(st)
        if ent is not None:
            entropy[0] += float((ent * mask).sum())
            entropy[1] += int(mask.sum())
    result = optimizer_step(learner.optimizer, learner.scaler, trainable_parameters(learner.model), cfg.max_grad_norm)
    if result.skipped:  # inf/nan gradients: no update, and the schedule does not advance
        return total, None
    learner.scheduler.step()
    return total, result.grad_norm


def _forward(learner: Learner, cfg: RunConfig, items: list[_Item], grad: bool,
             entropy: bool = False) -> tuple[Tensor, Tensor | None, Tensor]:
    """(reply log-probs [b, T], their entropies [b, T] when asked, the mask [b, T] on the
    model's device) of a micro-batch."""
    ids, mask = pad_batch([(it.traj.token_ids, it.traj.assistant_mask) for it in items], learner.pad_id)
    with torch.set_grad_enabled(grad):
        out = reply_log_probs(learner.model, ids, mask, cfg.temperature, cfg.chunk_size, return_entropy=entropy,
                              precision=learner.precision)
    logp, ent = out if entropy else (out, None)
    return logp, ent, mask.to(next(learner.model.parameters()).device)


def _stacked(rows: list[Tensor | None], width: int) -> Tensor:
    """[b, width] from 1-D rows, right-padded or cut to the micro-batch's width."""
    present = [r for r in rows if r is not None]
    if len(present) != len(rows):
        raise RuntimeError("an item has no old or reference log-probs: _before_updates did not run for it")
    return torch.stack([torch.nn.functional.pad(r, (0, width - r.shape[0]))[:width] for r in present])


# ============================================================================= evaluation


def heldout_eval(policy: Policy, suite: Suite, cfg: RunConfig, rollouts: Rollouts, step: int) -> Metrics:
    """pass@1 on the held-out split (same environment settings, the policy's temperature), with
    the same seed every time so successive evaluations see the same renamings. `rollouts`: the
    training run's own sandboxes, with the evaluation's episode settings."""
    tasks = suite.split(cfg.eval_split)
    ids = [t.id for t in tasks][: cfg.eval_max_tasks] if cfg.eval_max_tasks else None
    res = evaluate(policy, suite, split=cfg.eval_split, n=cfg.eval_generations, ks=[1],
                   seed=mix_seed(cfg.seed, "eval"), out=Path(cfg.out) / "evals" / f"step_{step:06d}",
                   progress=False, rollouts=rollouts, task_ids=ids,
                   policy_info={"name": "grpo", "step": step, "temperature": cfg.temperature})
    p1 = res.overall.get("pass@1")
    stats = res.overall.get("stats") or {}
    m: Metrics = {"eval/pass@1": p1["mean"] if p1 else None, "eval/episodes": res.overall.get("episodes"),
                  "eval/errors": res.overall.get("errors")}
    for k in ("reads", "edits", "turns", "first_edit_right", "reads_before_first_edit"):
        v = stats.get(k)
        if isinstance(v, (int, float)):
            m[f"eval/{k}"] = v
    return m


# ============================================================================= the run's progress and Ctrl-C


class RunState:
    """The step the run has reached and what a checkpoint of it holds: the RNG and sampler
    states as they were right after that step's update (not after its evaluation)."""

    def __init__(self, out: Path, cfg: RunConfig, learner: Learner, start_step: int, sampler: DynamicSampler) -> None:
        self.out, self.cfg, self.learner = out, cfg, learner
        self.step = self.last_saved = start_step
        self.snapshot = Snapshot(rng_state(), sampler.state_dict())
        self.pending: Metrics | None = None
        """The metrics row of a step not yet written (an interrupt in its evaluation writes it)."""

    def stepped(self, step: int, sampler: DynamicSampler, row: Metrics) -> None:
        self.step, self.pending = step, row
        self.snapshot = Snapshot(rng_state(), sampler.state_dict())

    def checkpoint(self) -> None:
        save_checkpoint(self.out, self.learner, self.snapshot, self.step, self.cfg)
        self.last_saved = self.step

    def checkpoint_if_new(self) -> None:
        if self.step > self.last_saved or not (self.out / CHECKPOINT).exists():
            self.checkpoint()


def mix_seed(*parts: object) -> int:
    """A 31-bit seed from any parts (stable across processes, unlike hash())."""
    return zlib.crc32(":".join(map(str, parts)).encode()) & 0x7FFFFFFF


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Hold Ctrl-C until the block ends, so an update and its checkpoint are never half done."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda s, f: caught.append(s))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


# ============================================================================= the console


class _Display:
    """A progress bar and one line per step on `console`; nothing without one."""

    def __init__(self, console: Console | None, total: int, done: int) -> None:
        self.console, self.total, self.done = console, total, done
        self.progress: Progress | None = None
        self.bar: TaskID | None = None
        if console is not None:
            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=console, transient=False)

    def __enter__(self) -> _Display:
        if self.progress is not None:
            self.progress.__enter__()
            self.bar = self.progress.add_task("grpo", total=self.total, completed=self.done)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.__exit__(None, None, None)

    def describe(self, text: str) -> None:
        if self.progress is not None and self.bar is not None:
            self.progress.update(self.bar, description=text)

    def stepped(self, row: Metrics, steps: int) -> None:
        if self.progress is not None and self.bar is not None:
            self.progress.update(self.bar, advance=1, description=f"step {row['step']}")
        if self.console is not None:
            self.console.print(_step_line(row, steps))


def _step_line(row: Metrics, steps: int) -> str:
    def f(key: str, fmt: str = "{:.3f}") -> str:
        v = row.get(key)
        return "-" if v is None else fmt.format(v)

    line = (f"step {row['step']}/{steps} reward {f('rollout/reward')} pass {f('rollout/pass_rate')} "
            f"groups {row.get('groups/kept')}/{row.get('groups/tried')} zero-adv {f('zero_adv_frac', '{:.2f}')} "
            f"entropy {f('entropy')} loss {f('loss/policy', '{:+.4f}')} |g| {f('grad_norm', '{:.3f}')} "
            f"gen {f('time/generation', '{:.0f}')}s train {f('time/training', '{:.0f}')}s")
    if row.get("eval/pass@1") is not None:
        line += f" | held-out pass@1 {row['eval/pass@1']:.3f}"
    return line

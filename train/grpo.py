"""`fixrl grpo`: the GRPO loop, flat, top to bottom.

    for step in steps:
        sample     groups of G episodes (dynamic sampling: until enough groups are mixed)
        advantages one per episode from its group's rewards, shared by all its tokens
        loss       over the tokens the policy sampled in every assistant turn, nothing else
        backward   one forward per trajectory (checkpointed blocks, chunked output head)
        clip, step (epochs x minibatches optimizer steps; one on-policy step by default)
        log        metrics.jsonl, TensorBoard, trajectories; eval and checkpoint on schedule

The policy that samples is the model being trained (HFPolicy wraps the same object), so every
rollout is on-policy. A run directory holds:

    config.json                 the resolved config (every field, after the preset)
    metrics.jsonl               one JSON line per step
    trajectories/step_*.jsonl.gz every sampled episode (kept or not, with its advantage)
    evals/step_*/               held-out evaluations (results.json as `fixrl eval` writes it)
    checkpoint/                 the latest resumable state: adapter (peft format) or model,
                                trainer_state.pt (optimizer, scheduler, scaler, RNG states, step),
                                sampler.json (data order, task memory)
    adapter/                    the latest adapter alone (peft format), for `--adapter`
    tb/                         TensorBoard events

Resuming (`--resume`) restores all of it: on CPU with the same seed the resumed steps equal the
uninterrupted run's (tests/train/test_grpo.py). What it does not guarantee: equality when the
sandbox pool is smaller than a rollout call's episodes (episodes then start as sandboxes free
up, and the batches the model generates in depend on timing), or across torch versions.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import logging
import random
import shutil
import signal
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch

from fixrl import tasks as tasks_pkg
from fixrl.evals.run import evaluate
from fixrl.harness.agent.policies import Policy, TimedPolicy
from fixrl.harness.agent.policies.hf import HFPolicy
from fixrl.harness.agent.rollouts import Rollouts, open_rollouts
from fixrl.tasks import Suite
from fixrl.train.advantages import compute_advantages, overlong_shaping
from fixrl.train.config import RESUMABLE_OVERRIDES, GRPOConfig, dotted_names
from fixrl.train.errors import RunError
from fixrl.train.logprobs import reply_log_probs
from fixrl.train.losses import LossStats, policy_loss
from fixrl.train.model import (
    Reference,
    check_adapter_dir,
    is_peft,
    load_trainable,
    save_trainable,
    trainable_parameters,
)
from fixrl.train.precision import mixed_precision, optimizer_step, restore_scaler
from fixrl.train.sampler import DynamicSampler, SampleBatch
from fixrl.train.sft import lr_factor, pad_batch

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint"


def mix_seed(*parts: Any) -> int:
    """A 31-bit seed from any parts (stable across processes, unlike hash())."""
    return zlib.crc32(":".join(map(str, parts)).encode()) & 0x7FFFFFFF


# ----------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Hold Ctrl-C until the block ends, so an update and its checkpoint are never half done."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[Any] = []
    previous = signal.signal(signal.SIGINT, lambda s, f: caught.append(s))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def rng_state() -> dict[str, Any]:

    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


@contextlib.contextmanager
def preserved_rng() -> Iterator[None]:
    """Whatever runs inside draws from the global RNGs without moving the run's streams."""
    state = rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def seed_all(seed: int) -> None:

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def rollout_metrics(batch: SampleBatch, G: int) -> dict[str, Any]:
    """What the policy did in every episode sampled for this step (kept or not)."""
    sampled = batch.sampled
    scored = [t for t in sampled if t.info.outcome != "error"]
    passing = [t for t in scored if t.info.outcome == "pass"]
    failing = [t for t in scored if t.info.outcome != "pass"]
    m: dict[str, Any] = {
        "rollout/episodes": len(sampled),
        "rollout/errors": len(sampled) - len(scored),
        "rollout/reward": _mean([float(t.reward) for t in scored]),
        "rollout/pass_rate": _mean([1.0 if t.info.outcome == "pass" else 0.0 for t in scored]),
        "groups/tried": batch.groups_tried,
        "groups/kept": len(batch.kept),
        "groups/wanted": batch.wanted,
        "groups/short": int(batch.short),
        "groups/too_small": batch.too_small,
        "zero_adv_frac": (batch.all_pass + batch.all_fail) / max(batch.groups_tried, 1),
        "zero_adv_frac/all_pass": batch.all_pass / max(batch.groups_tried, 1),
        "zero_adv_frac/all_fail": batch.all_fail / max(batch.groups_tried, 1),
        "sampler/rollout_calls": batch.rollout_calls,
        "sampler/skipped_solved": batch.skipped["solved"],
        "sampler/skipped_hopeless": batch.skipped["hopeless"],
        "policy_tokens": _mean([float(t.num_policy_tokens) for t in scored]),
        "policy_tokens/pass": _mean([float(t.num_policy_tokens) for t in passing]),
        "policy_tokens/fail": _mean([float(t.num_policy_tokens) for t in failing]),
    }
    for key in ("reads", "tests", "edits", "turns", "malformed"):
        m[f"rollout/{key}"] = _mean([float(getattr(t.info, key) or 0) for t in scored])
    statuses: dict[str, int] = {}
    for t in sampled:
        s = t.info.exit_status or "unknown"
        statuses[s] = statuses.get(s, 0) + 1
    for s in ("submitted", "out_of_turns", "out_of_tokens", "malformed", "error"):
        m[f"exit/{s}"] = statuses.pop(s, 0) / max(len(sampled), 1)
    for s, n in statuses.items():
        m[f"exit/{s}"] = n / max(len(sampled), 1)
    m["time/tools"] = sum(float(t.info.seconds.get("tools", 0.0)) for t in sampled)
    m["time/checks"] = sum(float(t.info.seconds.get("check", 0.0)) for t in sampled)
    return m


def pad_rows(trajs: list[Any], pad_id: int) -> tuple[Any, Any]:

    return pad_batch([(t.token_ids, t.assistant_mask) for t in trajs], pad_id)


# ----------------------------------------------------------------------------- the update


@dataclass
class Learner:
    """What a run trains and the state of its optimisation (all of it saved in a checkpoint)."""

    model: Any
    tokenizer: Any
    optimizer: Any
    scheduler: Any
    scaler: Any
    """torch.amp.GradScaler (enabled for fp16)."""
    reference: Any
    """The KL reference (train.model.Reference) or None when beta is 0."""
    precision: str = "fp32"
    """The resolved precision setting (`train.precision`): fp32 | fp16 | bf16."""

    @property
    def pad_id(self) -> int:
        return self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0


@dataclass
class _Item:
    traj: Any
    advantage: float
    old_logp: Any = None
    """[T'] the trainer's log-probs before any update (several updates per batch only)."""
    ref_logp: Any = None
    """[T'] the reference policy's log-probs (beta > 0 only)."""


def episode_advantages(groups: list[list[Any]], cfg: GRPOConfig) -> list[float]:
    """One advantage per trajectory of `groups` (in order), from its group's shaped rewards."""


    trajs = [t for g in groups for t in g]
    group_ids = torch.tensor([i for i, g in enumerate(groups) for _ in g])  # [N]
    rewards = torch.tensor([float(t.reward) for t in trajs])  # [N]
    turns = torch.tensor([float(t.info.turns or 0) for t in trajs])  # [N]
    shaped = overlong_shaping(rewards, turns, cfg.max_turns or 0, cfg.overlong_buffer)  # [N]
    return compute_advantages(shaped, group_ids, cfg.scale_rewards, cfg.baseline).tolist()  # [N]


def _forward(learner: Learner, cfg: GRPOConfig, items: list[_Item], grad: bool, entropy: bool = False):
    """Reply log-probs [b, T] (and entropies) of a micro-batch, and its mask on the model's device."""


    ids, mask = pad_rows([it.traj for it in items], learner.pad_id)
    with torch.set_grad_enabled(grad):
        out = reply_log_probs(learner.model, ids, mask, cfg.temperature, cfg.chunk_size, return_entropy=entropy,
                              precision=learner.precision)
    return out, mask.to(next(learner.model.parameters()).device)


def _before_updates(learner: Learner, cfg: GRPOConfig, items: list[_Item]) -> None:
    """pi_old (several updates per batch) and pi_ref (beta > 0), by the trainer's own forward,
    before any update."""
    for i in range(0, len(items), cfg.micro_batch_size):
        chunk = items[i:i + cfg.micro_batch_size]
        if cfg.needs_old_logprobs:
            lp, _ = _forward(learner, cfg, chunk, grad=False)
            for it, row in zip(chunk, lp):
                it.old_logp = row
        if learner.reference is not None:
            with learner.reference.active():
                lp, _ = _forward(learner, cfg, chunk, grad=False)
            for it, row in zip(chunk, lp):
                it.ref_logp = row


def _stacked(rows: list[Any], width: int) -> Any:
    """[b, width] from 1-D rows, right-padded or cut to the micro-batch's width."""

    return torch.stack([torch.nn.functional.pad(r, (0, width - r.shape[0]))[:width] for r in rows])


def _minibatch_step(learner: Learner, cfg: GRPOConfig, batch: list[_Item], first_pass: bool,
                    stats: Any, entropy: list[float]) -> tuple[float, float | None] | None:
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
        out, mask = _forward(learner, cfg, chunk, grad=True, entropy=first_pass)
        logp, ent = out if first_pass else (out, None)
        width = logp.shape[1]
        old = _stacked([it.old_logp for it in chunk], width) if cfg.needs_old_logprobs else logp.detach()
        ref = _stacked([it.ref_logp for it in chunk], width) if kl_on else None
        adv = torch.tensor([it.advantage for it in chunk], device=logp.device)
        loss, st = policy_loss(logp, old, adv, mask, loss_type=cfg.loss_type, epsilon=cfg.epsilon,
                               epsilon_high=cfg.epsilon_high, level=cfg.importance_sampling_level,
                               ref_logp=ref, beta=cfg.beta, kl_estimator=cfg.kl_estimator,
                               num_seqs=len(batch), num_tokens=tokens, constant=cfg.loss_constant,
                               micro_batches=len(micro))
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


def grpo_update(learner: Learner, groups: list[list[Any]], cfg: GRPOConfig,
                step: int) -> tuple[dict[str, Any], list[float]]:
    """Advantages, then num_iterations x steps_per_generation clipped optimizer steps on the kept
    groups. Returns (metrics, the advantage of each trajectory in `groups` order)."""


    adv_list = episode_advantages(groups, cfg)
    trajs = [t for g in groups for t in g]
    # Episodes without policy tokens cannot be trained on; zero-advantage ones with no KL term
    # contribute exactly nothing but their tokens to the normaliser, so they skip the forward.
    items = [_Item(t, a) for t, a in zip(trajs, adv_list) if t.num_policy_tokens > 0]
    m: dict[str, Any] = {"train/episodes": len(items),
                         "train/policy_tokens": sum(it.traj.num_policy_tokens for it in items),
                         "train/adv_abs_mean": _mean([abs(it.advantage) for it in items])}
    if not items:
        return m, adv_list
    learner.model.train()
    _before_updates(learner, cfg, items)
    gen = torch.Generator().manual_seed(mix_seed(cfg.seed, step, "minibatches"))
    stats, entropy = LossStats(), [0.0, 0]
    steps: list[tuple[float, float]] = []  # (loss, grad norm) of each optimizer step
    for iteration in range(cfg.num_iterations):
        order = torch.randperm(len(items), generator=gen) if cfg.steps_per_generation > 1 else torch.arange(len(items))
        for mb in order.chunk(cfg.steps_per_generation):
            done = _minibatch_step(learner, cfg, [items[k] for k in mb.tolist()], iteration == 0, stats, entropy)
            if done is not None:
                steps.append(done)
    m.update(stats.means())
    taken = [g for _, g in steps if g is not None]
    m.update({"loss/policy": _mean([x for x, _ in steps]), "entropy": entropy[0] / entropy[1] if entropy[1] else None,
              "grad_norm": _mean(taken), "lr": learner.scheduler.get_last_lr()[0],
              "train/optimizer_steps": len(taken), "train/skipped_steps": len(steps) - len(taken)})
    if learner.scaler.is_enabled():
        m["train/loss_scale"] = float(learner.scaler.get_scale())
    return m, adv_list


# ----------------------------------------------------------------------------- run directory


class RunLog:
    """metrics.jsonl, TensorBoard and per-step trajectory files."""

    def __init__(self, out: Path, cfg: GRPOConfig, start_step: int) -> None:
        self.out = out
        self.metrics = out / "metrics.jsonl"
        if start_step > 0 and self.metrics.exists():  # drop lines of steps after the checkpoint
            keep = [ln for ln in self.metrics.read_text().splitlines()
                    if ln.strip() and json.loads(ln).get("step", 0) <= start_step]
            self.metrics.write_text("".join(k + "\n" for k in keep))
        self.tb = None
        if cfg.tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter  # noqa: PLC0415 - tensorboard is an optional extra

                self.tb = SummaryWriter(str(out / "tb"), purge_step=start_step + 1 if start_step else None)
            except ImportError as e:
                log.warning("TensorBoard events are off (%s); install the 'tensorboard' extra", e)

    def write(self, row: dict[str, Any]) -> None:
        with self.metrics.open("a") as f:
            f.write(json.dumps(row, default=float) + "\n")
        if self.tb is not None:
            for k, v in row.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "step":
                    self.tb.add_scalar(k, v, row["step"])
            self.tb.flush()

    def trajectories(self, step: int, batch: SampleBatch, advantages: dict[int, float]) -> Path:
        d = self.out / "trajectories"
        d.mkdir(exist_ok=True)
        path = d / f"step_{step:06d}.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8") as f:
            for t in batch.sampled:
                row = t.to_dict()
                row.update(step=step, kept=id(t) in advantages, advantage=advantages.get(id(t)))
                f.write(json.dumps(row, default=str) + "\n")
        return path

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


def save_checkpoint(out: Path, learner: Learner, snapshot: dict[str, Any], step: int, cfg: GRPOConfig) -> Path:
    """Write RUN/checkpoint atomically (a new directory renamed over the old) and RUN/adapter."""


    tmp = out / f"{CHECKPOINT}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    model = learner.model
    weights = tmp / ("adapter" if is_peft(model) else "model")
    save_trainable(model, learner.tokenizer, weights)
    torch.save({"step": step, "optimizer": learner.optimizer.state_dict(), "scheduler": learner.scheduler.state_dict(),
                "scaler": learner.scaler.state_dict(), "rng": snapshot["rng"]}, tmp / "trainer_state.pt")
    (tmp / "sampler.json").write_text(json.dumps(snapshot["sampler"]))
    cfg.save(tmp / "config.json")
    final, old = out / CHECKPOINT, out / f"{CHECKPOINT}.old"
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    if old.exists():
        shutil.rmtree(old)
    if is_peft(model):
        user = out / "adapter"
        if user.exists():
            shutil.rmtree(user)
        shutil.copytree(final / "adapter", user)
    return final


def prepare_run(cfg: GRPOConfig, resume: bool, overrides: dict[str, Any] | None = None) -> tuple[GRPOConfig, int]:
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
    saved = GRPOConfig.load(ckpt / "config.json", **{**(overrides or {}), "out": str(out)})

    state = torch.load(ckpt / "trainer_state.pt", map_location="cpu", weights_only=False)
    return saved, int(state["step"])


# ----------------------------------------------------------------------------- evaluation


def heldout_eval(policy: Policy, suite: Suite, cfg: GRPOConfig, rollouts: Rollouts, step: int) -> dict[str, Any]:
    """pass@1 on the held-out split (same environment settings, the policy's temperature), with
    the same seed every time so successive evaluations see the same renamings. `rollouts`: the
    training run's own sandboxes, with the evaluation's episode settings."""

    tasks = suite.split(cfg.eval_split)
    ids = [t.id for t in tasks][: cfg.eval_max_tasks] if cfg.eval_max_tasks else None
    n = cfg.eval_generations
    res = evaluate(policy, suite, split=cfg.eval_split, n=n, ks=[1], seed=mix_seed(cfg.seed, "eval"),
                   out=Path(cfg.out) / "evals" / f"step_{step:06d}", progress=False, rollouts=rollouts,
                   task_ids=ids, policy_info={"name": "grpo", "step": step, "temperature": cfg.temperature})
    p1 = res.overall.get("pass@1")
    stats = res.overall.get("stats") or {}
    m = {"eval/pass@1": p1["mean"] if p1 else None, "eval/episodes": res.overall.get("episodes"),
         "eval/errors": res.overall.get("errors")}
    for k in ("reads", "edits", "turns", "first_edit_right", "reads_before_first_edit"):
        v = stats.get(k)
        if isinstance(v, (int, float)):
            m[f"eval/{k}"] = v
    return m


# ----------------------------------------------------------------------------- the loop


def load_learner(cfg: GRPOConfig, start_step: int) -> Learner:
    """The model to train (from the run's checkpoint when resuming) with a fresh optimizer,
    scheduler, scaler and KL reference; `restore` then loads a checkpoint's state into them."""


    out, ckpt = Path(cfg.out), Path(cfg.out) / CHECKPOINT
    if start_step:
        weights = ckpt / "adapter"
        source, adapter = (cfg.model, weights) if weights.exists() else (ckpt / "model", None)
    else:
        if cfg.adapter is not None:
            check_adapter_dir(cfg.adapter)
        source, adapter = cfg.model, cfg.adapter
    model, tok = load_trainable(source, adapter, cfg, cfg.device, cfg.precision)
    device = next(model.parameters()).device
    amp = mixed_precision(cfg.precision, device)
    reference = None
    if cfg.beta > 0:
        ref_file = out / "reference_adapter.pt"
        if cfg.adapter is None:
            reference = Reference(model, "base")
        elif start_step:
            reference = Reference(model, "adapter", torch.load(ref_file, map_location=device))
        else:
            reference = Reference(model, "adapter")
            out.mkdir(parents=True, exist_ok=True)
            torch.save(reference.weights, ref_file)
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, cfg.max_steps, cfg.warmup_steps, "constant"))
    return Learner(model, tok, optimizer, scheduler, amp.grad_scaler(), reference, amp.precision)


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


def load_run_suite(cfg: GRPOConfig) -> tuple[Any, list[Any], bool]:
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
        log.warning("no tasks in split %r: held-out evaluation is off", cfg.eval_split)
    return suite, train_tasks, do_eval


def sample_and_update(this: int, cfg: GRPOConfig, learner: Learner, sampler: DynamicSampler, policy: TimedPolicy,
                      rollouts: Rollouts, run: _RunState) -> tuple[dict[str, Any], Any, dict[int, float]]:
    """One step's sampling and update: (metrics row, the sampled batch, advantage by id(traj)).
    The update and the run's record of it run with Ctrl-C deferred, so neither is half done."""
    def rollout(task_list, call_index):
        return rollouts.run(policy, task_list, cfg.num_generations, mix_seed(cfg.seed, this, call_index))

    policy.seconds = 0.0
    t0 = time.perf_counter()
    batch = sampler.sample(rollout)
    row: dict[str, Any] = {"step": this, **rollout_metrics(batch, cfg.num_generations)}
    row["time/rollout"] = time.perf_counter() - t0
    row["time/generation"] = policy.seconds
    t0 = time.perf_counter()
    advantages: dict[int, float] = {}
    with deferred_interrupt():
        if batch.kept:
            m, adv = grpo_update(learner, batch.kept, cfg, this)
            row.update(m)
            advantages = {id(t): a for t, a in zip(batch.episodes, adv)}
        else:
            row["train/episodes"] = 0
        run.stepped(this, sampler, row)
    row["time/training"] = time.perf_counter() - t0
    row.setdefault("lr", learner.scheduler.get_last_lr()[0])
    return row, batch, advantages


def check_overrides(overrides: dict[str, Any] | None) -> None:
    bad = sorted(set(dotted_names(overrides or {})) - set(RESUMABLE_OVERRIDES))
    if bad:
        raise RunError(f"--resume continues the run as it was started; it cannot change {', '.join(bad)} "
                       f"(only {', '.join(RESUMABLE_OVERRIDES)})")


def run_grpo(cfg: GRPOConfig, resume: bool = False, overrides: dict[str, Any] | None = None,
             console: Any = None) -> dict[str, Any]:
    """Train; returns a summary. `overrides` (with resume) may change only RESUMABLE_OVERRIDES."""

    check_overrides(overrides)
    cfg, start_step = prepare_run(cfg, resume, overrides)
    out = Path(cfg.out)
    seed_all(cfg.seed)
    suite, train_tasks, do_eval = load_run_suite(cfg)
    learner = load_learner(cfg, start_step)
    cfg = dataclasses.replace(cfg, precision=learner.precision)  # config.json records the resolved setting
    out.mkdir(parents=True, exist_ok=True)
    cfg.save(out / "config.json")  # the resolved config, every field
    sampler = DynamicSampler.from_config(train_tasks, cfg)
    if start_step:
        restore(learner, sampler, out / CHECKPOINT)
    policy = TimedPolicy(HFPolicy(model=learner.model, tokenizer=learner.tokenizer, temperature=cfg.temperature,
                                  top_p=cfg.top_p, max_new_tokens=cfg.max_new_tokens, precision=learner.precision))
    runlog = RunLog(out, cfg, start_step)
    run = _RunState(out, cfg, learner, start_step, sampler)
    summary: dict[str, Any] = {"out": str(out), "start_step": start_step}
    started = time.time()
    progress = _progress(console)
    try:
        with open_rollouts(suite, cfg.env, cfg.sandbox, cfg.cluster,
                           max_total_tokens=cfg.max_total_tokens) as rollouts, \
                (progress if progress is not None else contextlib.nullcontext()):
            eval_rollouts = rollouts.with_env(dataclasses.replace(cfg.env, reward="hidden"))
            bar = progress.add_task("grpo", total=cfg.max_steps, completed=start_step) if progress else None
            for this in range(start_step + 1, cfg.max_steps + 1):
                t_step = time.perf_counter()
                _describe(progress, bar, f"step {this}: sampling and training")
                row, batch, advantages = sample_and_update(this, cfg, learner, sampler, policy, rollouts, run)
                if cfg.keep_trajectories:
                    runlog.trajectories(this, batch, advantages)
                if do_eval and (this % cfg.eval_steps == 0 or this == cfg.max_steps):
                    _describe(progress, bar, f"step {this}: held-out eval")
                    t0 = time.perf_counter()
                    with preserved_rng():
                        row.update(heldout_eval(policy, suite, cfg, eval_rollouts, this))
                    row["time/eval"] = time.perf_counter() - t0
                row["time/step"] = time.perf_counter() - t_step
                runlog.write(row)
                run.pending = None
                if cfg.save_steps and this % cfg.save_steps == 0:
                    with deferred_interrupt():
                        run.checkpoint()
                if progress is not None:
                    progress.update(bar, advance=1, description=f"step {this}")
                _print_step(console, row, cfg.max_steps)
                summary["last"] = row
    except KeyboardInterrupt:
        log.warning("interrupted: saving the checkpoint of step %d", run.step)
        with deferred_interrupt():
            if run.pending is not None:  # interrupted in its evaluation
                runlog.write(run.pending)
            run.checkpoint_if_new()
        runlog.close()
        raise
    with deferred_interrupt():
        run.checkpoint_if_new()
    runlog.close()
    summary.update(steps=run.step, seconds=time.time() - started,
                   adapter=str(out / "adapter") if is_peft(learner.model) else str(out / CHECKPOINT / "model"))
    return summary


class _RunState:
    """The step the run has reached and what a checkpoint of it holds: the RNG and sampler
    states as they were right after that step's update (not after its evaluation)."""

    def __init__(self, out: Path, cfg: GRPOConfig, learner: Learner, start_step: int, sampler: DynamicSampler) -> None:
        self.out, self.cfg, self.learner = out, cfg, learner
        self.step = self.last_saved = start_step
        self.snapshot = {"rng": rng_state(), "sampler": sampler.state_dict()}
        self.pending: dict[str, Any] | None = None
        """The metrics row of a step not yet written (an interrupt in its evaluation writes it)."""

    def stepped(self, step: int, sampler: DynamicSampler, row: dict[str, Any]) -> None:
        self.step, self.pending = step, row
        self.snapshot = {"rng": rng_state(), "sampler": sampler.state_dict()}

    def checkpoint(self) -> None:
        save_checkpoint(self.out, self.learner, self.snapshot, self.step, self.cfg)
        self.last_saved = self.step

    def checkpoint_if_new(self) -> None:
        if self.step > self.last_saved or not (self.out / CHECKPOINT).exists():
            self.checkpoint()


def _describe(progress: Any, bar: Any, text: str) -> None:
    if progress is not None:
        progress.update(bar, description=text)


def _progress(console: Any):
    if console is None:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415 - rich: only with a console

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=False)


def _print_step(console: Any, row: dict[str, Any], steps: int) -> None:
    if console is None:
        return

    def f(key: str, fmt: str = "{:.3f}") -> str:
        v = row.get(key)
        return "-" if v is None else fmt.format(v)

    line = (f"step {row['step']}/{steps} reward {f('rollout/reward')} pass {f('rollout/pass_rate')} "
            f"groups {row.get('groups/kept')}/{row.get('groups/tried')} zero-adv {f('zero_adv_frac', '{:.2f}')} "
            f"entropy {f('entropy')} loss {f('loss/policy', '{:+.4f}')} |g| {f('grad_norm', '{:.3f}')} "
            f"gen {f('time/generation', '{:.0f}')}s train {f('time/training', '{:.0f}')}s")
    if row.get("eval/pass@1") is not None:
        line += f" | held-out pass@1 {row['eval/pass@1']:.3f}"
    console.print(line)

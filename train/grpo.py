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
import gzip
import json
import logging
import random
import shutil
import signal
import threading
import time
import zlib
from pathlib import Path
from typing import Any, Iterator

from fixrl.harness.agent.rollouts import Rollouts
from fixrl.train.config import GRPOConfig

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint"
RESUMABLE_OVERRIDES = ("steps", "eval_every", "save_every", "backend", "image", "pool_size", "ray", "device",
                       "tensorboard", "keep_trajectories")


class RunError(ValueError):
    """A run directory that cannot be started or resumed (the message says what to do)."""


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
    import numpy as np
    import torch

    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    import numpy as np
    import torch

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
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def rollout_metrics(batch: Any, G: int) -> dict[str, Any]:
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
    from fixrl.train.sft import pad_batch

    return pad_batch([(t.token_ids, t.assistant_mask) for t in trajs], pad_id)


# ----------------------------------------------------------------------------- the update


def grpo_update(model: Any, groups: list[list[Any]], cfg: GRPOConfig, optimizer: Any, scaler: Any,
                scheduler: Any, reference: Any, step: int, pad_id: int) -> tuple[dict[str, Any], list[float]]:
    """Advantages, then cfg.epochs x cfg.minibatches clipped optimizer steps on the kept groups.
    Returns (metrics, the advantage of each trajectory in `groups` order)."""
    import torch

    from fixrl.train.advantages import compute_advantages, overlong_shaping
    from fixrl.train.logprobs import reply_log_probs
    from fixrl.train.losses import LossStats, policy_loss
    from fixrl.train.model import trainable_parameters

    trajs = [t for g in groups for t in g]
    group_ids = torch.tensor([i for i, g in enumerate(groups) for _ in g])  # [N]
    rewards = torch.tensor([float(t.reward) for t in trajs])  # [N]
    turns = torch.tensor([float(t.info.turns or 0) for t in trajs])  # [N]
    shaped = overlong_shaping(rewards, turns, cfg.max_turns, cfg.overlong_buffer)  # [N]
    advantages = compute_advantages(shaped, group_ids, cfg.scale_rewards)  # [N]
    adv_list = advantages.tolist()
    # Episodes without policy tokens cannot be trained on; zero-advantage ones with no KL term
    # contribute exactly nothing but their tokens to the normaliser, so they skip the forward.
    items = [(t, a) for t, a in zip(trajs, adv_list) if t.num_policy_tokens > 0]
    m: dict[str, Any] = {"train/episodes": len(items), "train/policy_tokens": sum(t.num_policy_tokens for t, _ in items),
                         "train/adv_abs_mean": _mean([abs(a) for _, a in items])}
    if not items:
        return m, adv_list
    device = next(model.parameters()).device
    params = trainable_parameters(model)
    model.train()

    def forward(batch, grad: bool, entropy: bool = False):
        ids, mask = pad_rows([t for t, _ in batch], pad_id)
        with torch.set_grad_enabled(grad):
            out = reply_log_probs(model, ids, mask, cfg.temperature, cfg.chunk_size, return_entropy=entropy)
        return out, mask.to(device)

    micro = cfg.micro_batch_size
    kl_on = reference is not None and cfg.beta > 0
    old_logp: dict[int, Any] = {}
    ref_logp: dict[int, Any] = {}
    for i in range(0, len(items), micro):
        chunk = items[i:i + micro]
        if cfg.needs_old_logprobs:  # pi_old by the trainer's own forward, before any update
            lp, _ = forward(chunk, grad=False)
            for j in range(len(chunk)):
                old_logp[i + j] = lp[j]
        if kl_on:
            with reference.active():
                lp, _ = forward(chunk, grad=False)
            for j in range(len(chunk)):
                ref_logp[i + j] = lp[j]

    gen = torch.Generator().manual_seed(mix_seed(cfg.seed, step, "minibatches"))
    stats = LossStats()
    losses, grad_norms = [], []
    ent_sum, ent_n = 0.0, 0
    for epoch in range(cfg.epochs):
        order = torch.randperm(len(items), generator=gen) if cfg.minibatches > 1 else torch.arange(len(items))
        for mb in order.chunk(cfg.minibatches):
            mb = mb.tolist()
            mb_tokens = sum(items[k][0].num_policy_tokens for k in mb)
            optimizer.zero_grad(set_to_none=True)
            mb_loss = 0.0
            train_idx = [k for k in mb if items[k][1] != 0.0 or kl_on]
            if not train_idx:  # nothing to learn here (and GradScaler.step needs a backward first)
                continue
            for i in range(0, len(train_idx), micro):
                ks = train_idx[i:i + micro]
                batch = [items[k] for k in ks]
                want_entropy = epoch == 0
                out, mask = forward(batch, grad=True, entropy=want_entropy)
                logp, ent = out if want_entropy else (out, None)
                width = logp.shape[1]

                def stack(d):
                    return torch.stack([torch.nn.functional.pad(d[k], (0, width - d[k].shape[0]))[:width] for k in ks])

                old = stack(old_logp) if cfg.needs_old_logprobs else logp.detach()
                ref = stack(ref_logp) if ref_logp else None
                adv = torch.tensor([a for _, a in batch], device=device)
                loss, st = policy_loss(logp, old, adv, mask, loss_type=cfg.loss_type, epsilon=cfg.epsilon,
                                       epsilon_high=cfg.epsilon_high, level=cfg.importance_sampling_level,
                                       ref_logp=ref, beta=cfg.beta, kl_estimator=cfg.kl_estimator,
                                       num_seqs=len(mb), num_tokens=mb_tokens, constant=cfg.loss_constant)
                scaler.scale(loss).backward()
                mb_loss += float(loss.detach())
                stats.add(st)
                if ent is not None:
                    ent_sum += float((ent * mask).sum())
                    ent_n += int(mask.sum())
            scaler.unscale_(optimizer)
            grad_norms.append(float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)))
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            losses.append(mb_loss)
    m.update(stats.means())
    m.update({"loss/policy": _mean(losses), "entropy": ent_sum / ent_n if ent_n else None,
              "grad_norm": _mean(grad_norms), "lr": scheduler.get_last_lr()[0],
              "train/optimizer_steps": len(losses)})
    if scaler.is_enabled():
        m["train/loss_scale"] = float(scaler.get_scale())
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
                from torch.utils.tensorboard import SummaryWriter

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

    def trajectories(self, step: int, batch: Any, advantages: dict[int, float]) -> Path:
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


def save_checkpoint(out: Path, model: Any, tokenizer: Any, optimizer: Any, scheduler: Any, scaler: Any,
                    snapshot: dict[str, Any], step: int, cfg: GRPOConfig) -> Path:
    """Write RUN/checkpoint atomically (a new directory renamed over the old) and RUN/adapter."""
    import torch

    from fixrl.train.model import is_peft, save_trainable

    tmp = out / f"{CHECKPOINT}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    weights = tmp / ("adapter" if is_peft(model) else "model")
    save_trainable(model, tokenizer, weights)
    torch.save({"step": step, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "scaler": scaler.state_dict(), "rng": snapshot["rng"]}, tmp / "trainer_state.pt")
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
    import torch

    state = torch.load(ckpt / "trainer_state.pt", map_location="cpu", weights_only=False)
    return saved, int(state["step"])


# ----------------------------------------------------------------------------- evaluation


def heldout_eval(policy: Any, suite: Any, cfg: GRPOConfig, rollouts: Rollouts, step: int) -> dict[str, Any]:
    """pass@1 on the held-out split (same environment settings, the policy's temperature), with
    the same seed every time so successive evaluations see the same renamings. `rollouts`: the
    training run's own sandboxes, with the evaluation's episode settings."""
    from fixrl.evals.run import evaluate

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


def run_grpo(cfg: GRPOConfig, resume: bool = False, overrides: dict[str, Any] | None = None,
             console: Any = None) -> dict[str, Any]:
    """Train; returns a summary. `overrides` (with resume) may change only RESUMABLE_OVERRIDES."""
    import torch

    from fixrl import tasks as tasks_pkg
    from fixrl.envs import EnvConfig
    from fixrl.harness.agent.policies import TimedPolicy
    from fixrl.harness.agent.policies.hf import HFPolicy
    from fixrl.harness.agent.rollouts import open_rollouts
    from fixrl.sandbox import SandboxConfig
    from fixrl.train.model import Reference, check_adapter_dir, is_peft, load_trainable, trainable_parameters
    from fixrl.train.sampler import DynamicSampler
    from fixrl.train.sft import lr_factor

    bad = sorted(set(overrides or {}) - set(RESUMABLE_OVERRIDES))
    if bad:
        raise RunError(f"--resume continues the run as it was started; it cannot change {', '.join(bad)} "
                       f"(only {', '.join(RESUMABLE_OVERRIDES)})")
    cfg, start_step = prepare_run(cfg, resume, overrides)
    out = Path(cfg.out)
    seed_all(cfg.seed)
    try:
        suite = tasks_pkg.load_suite(Path(cfg.suite))
    except (OSError, ValueError) as e:
        raise RunError(f"--suite {cfg.suite}: {e}") from e
    train_tasks = suite.split(cfg.split)
    if not train_tasks:
        raise RunError(f"suite {suite.name!r} has no tasks in split {cfg.split!r} (--split)")
    do_eval = cfg.eval_every > 0 and bool(suite.split(cfg.eval_split))
    if cfg.eval_every > 0 and not do_eval:
        log.warning("no tasks in split %r: held-out evaluation is off", cfg.eval_split)

    ckpt = out / CHECKPOINT
    if start_step:
        weights = ckpt / "adapter"
        if weights.exists():
            model, tok = load_trainable(cfg.model, weights, cfg, cfg.device)
        else:
            model, tok = load_trainable(ckpt / "model", None, cfg, cfg.device)
    else:
        if cfg.adapter is not None:
            check_adapter_dir(cfg.adapter)
        model, tok = load_trainable(cfg.model, cfg.adapter, cfg, cfg.device)
    device = next(model.parameters()).device
    out.mkdir(parents=True, exist_ok=True)
    cfg.save(out / "config.json")  # the resolved config, every field
    reference = None
    if cfg.beta > 0:
        ref_file = out / "reference_adapter.pt"
        if cfg.adapter is None:
            reference = Reference(model, "base")
        elif start_step:
            reference = Reference(model, "adapter", torch.load(ref_file, map_location=device))
        else:
            reference = Reference(model, "adapter")
            torch.save(reference.weights, ref_file)
    params = trainable_parameters(model)
    optimizer = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, cfg.steps, cfg.warmup_steps, "constant"))
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
    sampler = DynamicSampler.from_config(train_tasks, cfg)
    if start_step:
        state = torch.load(ckpt / "trainer_state.pt", map_location="cpu", weights_only=False)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        scaler.load_state_dict(state["scaler"])
        try:
            sampler.load_state_dict(json.loads((ckpt / "sampler.json").read_text()))
        except ValueError as e:
            raise RunError(f"--resume: {e}") from e
        set_rng_state(state["rng"])
    policy = TimedPolicy(HFPolicy(model=model, tokenizer=tok, temperature=cfg.temperature, top_p=cfg.top_p,
                                  max_new_tokens=cfg.max_new_tokens))
    prompt = dict(system_prompt=cfg.system_prompt, tool_schemas=cfg.tool_schemas)
    env_config = EnvConfig(max_turns=cfg.max_turns, max_edits=cfg.max_edits, rename=cfg.rename, reward=cfg.reward,
                           **prompt)
    eval_env = EnvConfig(max_turns=cfg.max_turns, max_edits=cfg.max_edits, rename=cfg.rename, **prompt)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    runlog = RunLog(out, cfg, start_step)
    progress = _progress(console)
    step = start_step
    snapshot = {"rng": rng_state(), "sampler": sampler.state_dict()}
    last_saved = start_step
    pending: dict[str, Any] | None = None
    summary: dict[str, Any] = {"out": str(out), "start_step": start_step}

    def checkpoint() -> None:
        nonlocal last_saved
        save_checkpoint(out, model, tok, optimizer, scheduler, scaler, snapshot, step, cfg)
        last_saved = step

    started = time.time()
    try:
        sandbox = SandboxConfig(backend=cfg.backend, image=cfg.image, pool_size=cfg.pool_size, ray=cfg.ray)
        with open_rollouts(suite, env_config, sandbox, max_total_tokens=cfg.max_total_tokens) as rollouts, \
                (progress if progress is not None else contextlib.nullcontext()):
            eval_rollouts = rollouts.with_env(eval_env)
            bar = progress.add_task("grpo", total=cfg.steps, completed=start_step) if progress is not None else None
            for step_index in range(start_step, cfg.steps):
                this = step_index + 1
                t_step = time.perf_counter()
                policy.seconds = 0.0

                # 1. sample: groups of G, several per batched rollout call
                def rollout(task_list, call_index, _step=this):
                    return rollouts.run(policy, task_list, cfg.num_generations, mix_seed(cfg.seed, _step, call_index))

                if progress is not None:
                    progress.update(bar, description=f"step {this}: sampling")
                t0 = time.perf_counter()
                batch = sampler.sample(rollout)
                row: dict[str, Any] = {"step": this}
                row.update(rollout_metrics(batch, cfg.num_generations))
                row["time/rollout"] = time.perf_counter() - t0
                row["time/generation"] = policy.seconds

                # 2-4. advantages, loss, backward, clip, optimizer step (Ctrl-C waits for it)
                if progress is not None:
                    progress.update(bar, description=f"step {this}: training")
                t0 = time.perf_counter()
                advantages: dict[int, float] = {}
                with deferred_interrupt():
                    if batch.kept:
                        m, adv = grpo_update(model, batch.kept, cfg, optimizer, scaler, scheduler, reference,
                                             this, pad_id)
                        row.update(m)
                        for t, a in zip(batch.episodes, adv):
                            advantages[id(t)] = a
                    else:
                        row["train/episodes"] = 0
                    step = this
                    snapshot = {"rng": rng_state(), "sampler": sampler.state_dict()}
                row["time/training"] = time.perf_counter() - t0
                row.setdefault("lr", scheduler.get_last_lr()[0])

                # 5. held-out evaluation and checkpoint on schedule
                if cfg.keep_trajectories:
                    runlog.trajectories(this, batch, advantages)
                pending = row
                if do_eval and (this % cfg.eval_every == 0 or this == cfg.steps):
                    if progress is not None:
                        progress.update(bar, description=f"step {this}: held-out eval")
                    t0 = time.perf_counter()
                    with preserved_rng():
                        row.update(heldout_eval(policy, suite, cfg, eval_rollouts, this))
                    row["time/eval"] = time.perf_counter() - t0
                row["time/step"] = time.perf_counter() - t_step
                runlog.write(row)
                pending = None
                if cfg.save_every and this % cfg.save_every == 0:
                    with deferred_interrupt():
                        checkpoint()
                if progress is not None:
                    progress.update(bar, advance=1, description=f"step {this}")
                _print_step(console, row, cfg.steps)
                summary["last"] = row
    except KeyboardInterrupt:
        log.warning("interrupted: saving the checkpoint of step %d", step)
        with deferred_interrupt():
            if pending is not None and pending.get("step") == step:  # interrupted in its evaluation
                runlog.write(pending)
            if step > last_saved or not (out / CHECKPOINT).exists():
                checkpoint()
        runlog.close()
        raise
    with deferred_interrupt():
        if step > last_saved or not (out / CHECKPOINT).exists():
            checkpoint()
    runlog.close()
    summary.update(steps=step, seconds=time.time() - started, adapter=str(out / "adapter") if is_peft(model) else
                   str(out / CHECKPOINT / "model"))
    return summary


def _progress(console: Any):
    if console is None:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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

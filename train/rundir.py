"""What a GRPO run writes into its directory and reads back to resume: metrics.jsonl, TensorBoard
events, the per-step trajectory files, the checkpoint (weights, optimizer, scheduler, scaler,
sampler and RNG states, config.json) and the adapter alone.

What it does not guarantee: that a checkpoint loads under another torch version; or a resumable
directory after a crash (not Ctrl-C, which `grpo` holds until a checkpoint is written) between
the two renames that put a new checkpoint in place: the last one is then in `checkpoint.old`,
and `--resume` reads only `checkpoint`.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import logging
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, TypedDict

import numpy as np
import torch
from torch import Tensor

from fixrl.train.batch import SampleBatch
from fixrl.train.model import is_peft, save_trainable
from fixrl.train.resolve import RunConfig

if TYPE_CHECKING:
    from fixrl.train.grpo import Learner

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint"

Metrics = dict[str, float | None]
"""One step's row of metrics.jsonl: numbers, None where a value is undefined (no episodes)."""


class RunLog:
    """metrics.jsonl, TensorBoard and per-step trajectory files."""

    def __init__(self, out: Path, cfg: RunConfig, start_step: int) -> None:
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

    def write(self, row: Metrics) -> None:
        with self.metrics.open("a") as f:
            f.write(json.dumps(row, default=float) + "\n")
        if self.tb is not None:
            for k, v in row.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "step":
                    self.tb.add_scalar(k, v, row["step"])
            self.tb.flush()

    def trajectories(self, step: int, batch: SampleBatch) -> Path:
        """Every trajectory sampled for `step`, each with whether it was trained on and its advantage."""
        d = self.out / "trajectories"
        d.mkdir(exist_ok=True)
        path = d / f"step_{step:06d}.jsonl.gz"
        advantages = batch.advantages()
        with gzip.open(path, "wt", encoding="utf-8") as f:
            for t in batch.sampled:
                row = t.to_dict()
                row.update(step=step, kept=id(t) in advantages, advantage=advantages.get(id(t)))
                f.write(json.dumps(row, default=str) + "\n")
        return path

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


class RngState(TypedDict, total=False):
    """The global RNGs' states, as trainer_state.pt holds them."""

    python: tuple[object, ...]
    numpy: tuple[str, np.ndarray, int, int, float]
    torch: Tensor
    cuda: list[Tensor]


@dataclass
class Snapshot:
    """What a checkpoint of a step restores besides the weights and the optimizer."""

    rng: RngState
    sampler: dict[str, Any]
    """`DynamicSampler.state_dict()`."""


def save_checkpoint(out: Path, learner: Learner, snapshot: Snapshot, step: int, cfg: RunConfig) -> Path:
    """Write RUN/checkpoint atomically (a new directory renamed over the old) and RUN/adapter."""
    tmp = out / f"{CHECKPOINT}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    model = learner.model
    save_trainable(model, learner.tokenizer, tmp / ("adapter" if is_peft(model) else "model"))
    torch.save({"step": step, "optimizer": learner.optimizer.state_dict(), "scheduler": learner.scheduler.state_dict(),
                "scaler": learner.scaler.state_dict(), "rng": snapshot.rng}, tmp / "trainer_state.pt")
    (tmp / "sampler.json").write_text(json.dumps(snapshot.sampler))
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


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_state() -> RngState:
    state: RngState = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: RngState) -> None:
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

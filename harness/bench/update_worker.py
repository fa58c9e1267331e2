"""The measuring side of `fixrl bench grpo-step` (CPU) and `fixrl bench gpu`: one process per
model size, run as `python -m fixrl.harness.bench.update_worker ...`, prints one JSON line.

For a Qwen2.5 shape with random weights and a new LoRA adapter (r16, all linear layers, made by
`train.model.make_trainable`, as training makes it) it measures, in this order:
- the memory model's two transients (`train/memory_model.py`) on a one-layer model of the shape:
  `layer`, one block's forward + backward without checkpointing (a trajectory of T tokens whose
  last token is the only reply token, so the head costs nothing), and `head`, the chunked output
  head's forward + backward over the reply positions;
- the whole update: `train.grpo.grpo_update` -- forward, backward, optimizer step, the loss
  scaler in fp16 -- on one 6-turn trajectory of T tokens, after a warm-up update on a short one
  (which allocates AdamW's state, as every update after a run's first finds it). Its group
  partner has no policy tokens, so the update makes exactly one forward, over that trajectory.

Memory: on a CPU, peak RSS (`proc.py`; `total` is the peak above the RSS the process
had before it built any model); on CUDA, the caching allocator's peak allocated bytes (`total`
absolute, as a T4 would have to hold them) and reserved bytes. On CUDA `--cap-bytes` caps the
process with `torch.cuda.set_per_process_memory_fraction`; on a CPU it caps the address space
(RLIMIT_AS) above what the process maps before the first model -- for dry runs of a cap. A step
that runs out of memory is reported `fits: false`; the worker goes on to the next length.
"""
from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
from dataclasses import asdict
from typing import Any

import torch

from fixrl.harness.agent.trajectory import Trajectory
from fixrl.harness.bench.logprobs import largest_chunk, layout
from fixrl.harness.bench.proc import cpu_seconds, reset_peak, status_mib
from fixrl.harness.model.precision import autocast, compute_dtype
from fixrl.train.config import LoRAConfig
from fixrl.train.memory_model import SHAPES, ModelShape
from fixrl.train.precision import mixed_precision
from fixrl.train.resolve import make_config, resolve

MIB = 2 ** 20
TEXT_VOCAB = 151_643
"""Ids below Qwen2.5's special tokens: what a trajectory's random text is drawn from."""


def random_model(shape: ModelShape, precision: str, device: Any, rank: int) -> Any:
    """A Qwen2 causal LM of `shape` with random weights in the setting's dtype, on `device`,
    with a new LoRA adapter of rank `rank` (alpha 2r) on every linear layer."""
    from transformers import AutoModelForCausalLM, Qwen2Config  # noqa: PLC0415 - the command line imports this bench for its flags

    from fixrl.train.model import make_trainable  # noqa: PLC0415 - torch: the command line imports this bench for its flags

    cfg = Qwen2Config(vocab_size=shape.vocab, hidden_size=shape.hidden, intermediate_size=shape.intermediate,
                      num_hidden_layers=shape.layers, num_attention_heads=shape.heads,
                      num_key_value_heads=shape.kv_heads, tie_word_embeddings=shape.tied,
                      max_position_embeddings=32768)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=compute_dtype(precision))
    return make_trainable(model, None, LoRAConfig(lora_rank=rank, lora_alpha=2 * rank), device, precision)


def bench_groups(tokens: int, reply: int, turns: int, prompt: int, seed: int = 1,
                 vocab: int = TEXT_VOCAB) -> list[list[Trajectory]]:
    """One group: the benchmark trajectory (reward 1) and a partner without policy tokens
    (reward 0), so the trajectory's advantage is 0.5 and the update makes one forward."""
    spans = layout(tokens, reply, turns, prompt)
    n = spans[-1][1]
    ids = torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()
    mask = [0] * n
    for a, b in spans:
        mask[a:b] = [1] * (b - a)
    info = {"turns": turns, "outcome": "pass"}
    return [[Trajectory("bench", ids, mask, group=0, reward=1.0, info=info),
             Trajectory("bench", ids[:2], [0, 0], group=0, reward=0.0, info=dict(info, outcome="fail"))]]


class UpdateRig:
    """What `run_grpo` builds around `grpo_update`: the config, AdamW, a constant schedule and
    the setting's loss scaler, kept across updates."""

    def __init__(self, model: Any, precision: str, chunk_size: int) -> None:
        from fixrl.train.model import trainable_parameters  # noqa: PLC0415 - torch: the command line imports this bench for its flags

        self.model = model
        self.cfg = resolve(make_config("dynamic_mean", precision=precision, chunk_size=chunk_size, learning_rate=1e-5))
        self.optimizer = torch.optim.AdamW(trainable_parameters(model), lr=self.cfg.learning_rate)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: 1.0)
        self.scaler = mixed_precision(precision, next(model.parameters()).device).grad_scaler()
        self.steps = 0

    def update(self, groups: list[list[Trajectory]]) -> dict[str, Any]:
        from fixrl.train.grpo import Learner, grpo_update  # noqa: PLC0415 - torch: the command line imports this bench for its flags

        self.steps += 1
        learner = Learner(self.model, _PadZero(), self.optimizer, self.scheduler, self.scaler, None,
                          self.cfg.precision or "fp32")
        m, _ = grpo_update(learner, groups, self.cfg, self.steps)
        return m


class _PadZero:
    """A tokenizer stand-in: the bench's rows pad with id 0."""

    pad_token_id = 0


# ----------------------------------------------------------------------------- memory probes


class Probe:
    """Peak memory and time of a block, on the CPU (RSS) or a CUDA device (the allocator)."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.baseline = 0.0 if self.cuda else status_mib("VmRSS")
        """MiB before any model: RSS of the interpreter and libraries (0 on CUDA)."""

    def now_mib(self) -> float:
        return torch.cuda.memory_allocated() / MIB if self.cuda else status_mib("VmRSS")

    def start(self) -> None:
        gc.collect()
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        self.before, self.exact = self.now_mib(), (True if self.cuda else reset_peak())
        self.t0, self.c0 = time.perf_counter(), cpu_seconds()

    def stop(self) -> dict[str, Any]:
        if self.cuda:
            torch.cuda.synchronize()
        seconds, cpu = time.perf_counter() - self.t0, cpu_seconds() - self.c0
        peak = torch.cuda.max_memory_allocated() / MIB if self.cuda else status_mib("VmHWM")
        out = {"peak_mib": peak - self.before, "total_mib": peak - self.baseline, "seconds": seconds,
               "cpu_seconds": cpu, "exact_peak": self.exact}
        if self.cuda:
            out["reserved_mib"] = torch.cuda.max_memory_reserved() / MIB
        return out


def is_oom(e: BaseException) -> bool:
    text = str(e)
    return isinstance(e, (MemoryError, torch.OutOfMemoryError)) or "can't allocate memory" in text \
        or "not enough memory" in text


def oom_text(e: BaseException) -> str:
    first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
    return f"out of memory: {first}"


def cap_memory(device: torch.device, cap_bytes: int | None) -> None:
    """The process may hold at most `cap_bytes` (CUDA: of the allocator; CPU: address space
    beyond what it maps now)."""
    if not cap_bytes:
        return
    if device.type == "cuda":
        total = torch.cuda.get_device_properties(device).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, cap_bytes / total), device)
        return
    limit = int(status_mib("VmSize") * MIB) + cap_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------- measurements


def measure_layer(model: Any, tokens: int, precision: str, probe: Probe) -> dict[str, Any]:
    """One block's forward + backward, not checkpointed: a one-layer model over `tokens`
    positions whose last one is the only reply token."""
    from fixrl.train.logprobs import reply_log_probs  # noqa: PLC0415 - torch: the command line imports this bench for its flags

    device = next(model.parameters()).device
    ids = torch.randint(0, TEXT_VOCAB, (1, tokens), generator=torch.Generator().manual_seed(2)).to(device)
    mask = torch.zeros(1, tokens, dtype=torch.long, device=device)
    mask[0, -1] = 1
    probe.start()
    reply_log_probs(model, ids, mask, gradient_checkpointing=False, precision=precision).sum().backward()
    out = probe.stop()
    model.zero_grad(set_to_none=True)
    return out


def measure_head(model: Any, reply: int, chunk_size: int, precision: str, probe: Probe) -> dict[str, Any]:
    """The chunked output head's forward + backward over `reply` positions (hidden states given),
    with the entropy the update logs."""
    from fixrl.train.logprobs import head_log_probs, split_causal_lm  # noqa: PLC0415 - torch: the command line imports this bench for its flags

    _, head = split_causal_lm(model)
    device = head.weight.device
    g = torch.Generator().manual_seed(3)
    hidden = torch.randn(reply, head.weight.shape[1], generator=g).mul_(0.5).to(device, compute_dtype(precision))
    hidden.requires_grad_(True)
    targets = torch.randint(0, TEXT_VOCAB, (reply,), generator=g).to(device)
    probe.start()
    with autocast(precision, device.type):
        logp, _ = head_log_probs(head, hidden, targets, 1.0, chunk_size, return_entropy=True)  # as grpo_update
    logp.sum().backward()
    return probe.stop()


def measure_parts(shape: ModelShape, args: argparse.Namespace, device: torch.device, probe: Probe) -> dict:
    one = random_model(shape.with_layers(1), args.precision, device, args.lora_rank)
    measure_layer(one, 64, args.precision, probe)  # warm-up: kernels, thread pools, allocator paths
    measure_head(one, 8, args.chunk_size, args.precision, probe)
    layer = {str(t): measure_layer(one, t, args.precision, probe) for t in args.tokens}
    chunk_rows = largest_chunk(args.reply_tokens, args.chunk_size)
    head = measure_head(one, args.reply_tokens, args.chunk_size, args.precision, probe)
    del one
    _free(device)
    return {"layer": layer, "head": dict(head, chunk_rows=chunk_rows)}


def measure_steps(shape: ModelShape, args: argparse.Namespace, device: torch.device, probe: Probe) -> dict:
    """The whole update at each length; weights and warm-up first."""
    before = probe.now_mib()
    model = random_model(shape, args.precision, device, args.lora_rank)
    out: dict[str, Any] = {"weights_mib": probe.now_mib() - before}
    rig = UpdateRig(model, args.precision, args.chunk_size)
    rig.update(bench_groups(256, 64, 2, 64))
    steps = {}
    for t in args.tokens:
        groups = bench_groups(t, args.reply_tokens, args.turns, args.prompt_tokens)
        error = None
        try:
            probe.start()
            m = rig.update(groups)
            r = probe.stop()
            r.update(fits=True, loss=m.get("loss/policy"), grad_norm=m.get("grad_norm"),
                     skipped_steps=m.get("train/skipped_steps"), loss_scale=m.get("train/loss_scale"),
                     policy_tokens=m.get("train/policy_tokens"))
        except (RuntimeError, MemoryError) as e:
            if not is_oom(e):
                raise
            error = oom_text(e)
        if error is not None:  # outside the except: its traceback no longer holds the step's tensors
            rig.optimizer.zero_grad(set_to_none=True)
            _free(device)
            peak = torch.cuda.max_memory_allocated() / MIB if device.type == "cuda" else None
            r = {"fits": False, "error": error, "total_mib": peak}
        steps[str(t)] = r
    out["steps"] = steps
    return out


WARM_UP = ModelShape("warm-up", 1, 64, 128, 4, 2, vocab=1024)


def warm_up(device: torch.device, precision: str) -> None:
    """One update on a micro model, then freed: imports, kernels, thread pools and allocator
    paths are in place before the baseline is taken, so the figures hold the models alone."""
    model = random_model(WARM_UP, precision, device, 4)
    UpdateRig(model, precision, 64).update(bench_groups(128, 32, 2, 32, vocab=WARM_UP.vocab))
    del model
    _free(device)


def run_worker(args: argparse.Namespace) -> dict[str, Any]:
    shape = SHAPES[args.size]
    if args.layers:
        shape = shape.with_layers(args.layers)
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    if device.type == "cuda":
        torch.cuda.init()
        torch.cuda.set_device(device)  # the allocator statistics the probe reads are the current device's
    warm_up(device, args.precision)
    probe = Probe(device)
    cap_memory(device, args.cap_bytes)
    result: dict[str, Any] = {"size": args.size, "shape": asdict(shape), "precision": args.precision,
                              "device": str(device), "threads": torch.get_num_threads(), "cap_bytes": args.cap_bytes,
                              "tokens": args.tokens, "reply_tokens": args.reply_tokens, "lora_rank": args.lora_rank,
                              "torch": torch.__version__}
    if device.type == "cuda":
        result["device_name"] = torch.cuda.get_device_name(device)
    try:
        if args.parts:
            result["parts"] = measure_parts(shape, args, device, probe)
        if args.steps:
            result.update(measure_steps(shape, args, device, probe))
    except (RuntimeError, MemoryError) as e:  # out of memory outside a step: building the model
        if not is_oom(e):
            raise
        result.update(error=oom_text(e), oom=True)
    return result


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fixrl.harness.bench.update_worker")
    p.add_argument("--size", choices=sorted(SHAPES), required=True)
    p.add_argument("--layers", type=int, default=None, help="decoder layers (default: the shape's own)")
    p.add_argument("--precision", default="fp16")
    p.add_argument("--device", default="cpu")
    p.add_argument("--tokens", type=lambda s: [int(x) for x in s.split(",")], default=[5600])
    p.add_argument("--reply-tokens", type=int, default=600)
    p.add_argument("--turns", type=int, default=6)
    p.add_argument("--prompt-tokens", type=int, default=1000)
    p.add_argument("--chunk-size", type=int, default=256)
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--cap-bytes", type=int, default=None)
    p.add_argument("--parts", action="store_true", help="measure the memory model's transients")
    p.add_argument("--steps", action="store_true", help="measure the whole update at each length")
    return p


if __name__ == "__main__":
    print(json.dumps(run_worker(parser().parse_args())))
    sys.exit(0)

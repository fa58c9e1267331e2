"""`fixrl bench logprobs`: peak memory and time of a training step's log-probs, three ways.

Model: Qwen2.5-0.5B's dimensions (vocab 151,936, hidden 896, 14 heads / 2 KV heads,
intermediate 4,864, tied embeddings) with random weights and by default FEWER decoder layers
than the real 24 (4, to keep a CPU run short; `--layers all` runs all 24). The output head's memory
and time do not depend on the layer count; the decoder's time does, and it is what separates
(b) from (c): (b) runs every layer over about 3.6 times as many positions. With fewer layers
the head's fixed cost is a larger share of both, so the measured time ratio understates the
full model's. A LoRA adapter (r=16, all linear layers) is the trainable part, as in
GRPO. Trajectory: a 6-turn rollout of about 5,600 tokens of which about 600 are the model's
(a 1,000-token prompt, 6 replies of 100 tokens, 5 tool results of 800).

Methods, each a forward + backward of sum(log-probs of the reply tokens):
  (a) naive: one full forward, logits and a float32 log-softmax over every position [T, V];
  (b) per turn: one forward per assistant turn over its whole prefix (re-reading the prefix
      each turn), head only at that turn's reply positions, checkpointed blocks, as the seed;
  (c) fixrl: `train.logprobs.reply_log_probs`, one forward, checkpointed blocks, the head in
      checkpointed chunks at reply positions only.
"Logits memory" is the same three ways for the output-head stage alone, given the hidden
states (a: head + log-softmax over all T positions; c: fixrl's chunked head at the ~600 reply
positions; "one chunk": fixrl's head on one chunk alone, as many positions as the largest
chunk it computes: the ~600 positions are split into equal chunks of at most --chunk-size).

How memory is measured: peak RSS above the RSS before the step, each measurement in a fresh
subprocess (`proc.py` says how and why). The naive step (a) keeps every layer's
activations and the [T, V] logits; when the estimate of what it needs exceeds the memory
available it is not run, and the output says so.
Time is the CPU seconds (user + system) the process spent in the step, from getrusage, with one
torch thread by default (`--threads`): on a machine shared with other jobs, wall-clock time of
runs made one after another measures the neighbours' load as much as the method, and with
several threads an oversubscribed machine adds OpenMP spin-waiting to CPU time; one thread's
CPU time is the work done. Wall-clock seconds of the same run are reported beside it.
"""
from __future__ import annotations

import gc
import json
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from rich.table import Table

from fixrl.harness.bench.errors import BenchError
from fixrl.harness.bench.proc import (
    WorkerFailed,
    available_gib,
    cpu_seconds,
    reset_peak,
    run_worker,
    status_mib,
)

VOCAB, HIDDEN, HEADS, KV_HEADS, INTERMEDIATE = 151_936, 896, 14, 2, 4_864
REAL_LAYERS = 24
WORKERS = ("head_chunk", "head_fixrl", "head_naive", "step_fixrl", "step_per_turn", "step_naive")


@dataclass
class Config:
    """`fixrl bench logprobs`."""

    layers: str = "4"
    """Decoder layers: a number from 1 to 24, or `all` (Qwen2.5-0.5B has 24; 4 keeps a CPU run short)."""
    tokens: int = 5600
    """Trajectory length."""
    reply_tokens: int = 600
    """Tokens the policy sampled."""
    turns: int = 6
    """Assistant turns."""
    prompt_tokens: int = 1000
    """System prompt + tools + issue."""
    chunk_size: int = 256
    """fixrl's reply positions per head chunk."""
    threads: int = 1
    """Torch threads per measurement (1: CPU time is the work done, no spin-waiting)."""
    timeout: float = 3600
    """Seconds per measurement."""


def layer_count(layers: str) -> int:
    """`--layers` as a number of decoder layers; BenchError naming the flag when it is not one."""
    if layers == "all":
        return REAL_LAYERS
    try:
        n = int(layers)
    except ValueError:
        raise BenchError(f"bench logprobs: --layers {layers!r}: a number of layers or `all`") from None
    if not 1 <= n <= REAL_LAYERS:
        raise BenchError(f"bench logprobs: --layers {n}: between 1 and {REAL_LAYERS}")
    return n


def layout(tokens: int, reply: int, turns: int, prompt: int) -> list[tuple[int, int]]:
    """[start, end) of each assistant turn: prompt, then reply / tool result alternating."""
    per_reply = reply // turns
    tool = (tokens - prompt - per_reply * turns) // max(turns - 1, 1)
    if per_reply < 1 or tool < 0:
        raise ValueError(f"cannot lay out {turns} turns of {per_reply} reply tokens in {tokens} tokens "
                         f"after a {prompt}-token prompt")
    spans, pos = [], prompt
    for _ in range(turns):
        spans.append((pos, pos + per_reply))
        pos += per_reply + tool
    return spans


def largest_chunk(n: int, chunk_size: int) -> int:
    """Rows of the largest chunk fixrl's head computes for n reply positions (equal chunks)."""
    n_chunks = -(-n // chunk_size)
    return -(-n // n_chunks)


# ----------------------------------------------------------------------------- worker side
def _worker(name: str, cfg: Config) -> dict:
    import torch  # noqa: PLC0415 - the command line imports this bench for its flags
    from peft import LoraConfig, get_peft_model  # noqa: PLC0415 - the command line imports this bench for its flags
    from transformers import Qwen2Config, Qwen2ForCausalLM  # noqa: PLC0415 - the command line imports this bench for its flags

    from fixrl.train.logprobs import head_log_probs, plain_log_probs, reply_log_probs, split_causal_lm  # noqa: PLC0415 - torch: the command line imports this bench for its flags

    torch.set_num_threads(cfg.threads)
    torch.manual_seed(0)
    shape = Qwen2Config(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTERMEDIATE,
                        num_hidden_layers=layer_count(cfg.layers), num_attention_heads=HEADS,
                        num_key_value_heads=KV_HEADS, max_position_embeddings=32768, tie_word_embeddings=True)
    model = get_peft_model(Qwen2ForCausalLM(shape).float(),
                           LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
    model.train()
    spans = layout(cfg.tokens, cfg.reply_tokens, cfg.turns, cfg.prompt_tokens)
    T = spans[-1][1]
    ids = torch.randint(0, VOCAB, (1, T), generator=torch.Generator().manual_seed(1))
    mask = torch.zeros(1, T, dtype=torch.long)
    for a, b in spans:
        mask[0, a:b] = 1
    decoder, head = split_causal_lm(model)
    rows, cols = mask.nonzero(as_tuple=True)

    def step_naive():
        plain_log_probs(model, ids, mask).sum().backward()

    def step_fixrl():
        reply_log_probs(model, ids, mask, chunk_size=cfg.chunk_size).sum().backward()

    def step_per_turn():
        for a, b in spans:
            m = torch.zeros(1, b, dtype=torch.long)
            m[0, a:b] = 1
            reply_log_probs(model, ids[:, :b], m, chunk_size=b).sum().backward()

    hidden = torch.randn(1, T, HIDDEN).mul_(0.5).requires_grad_(True)  # stands in for the decoder's output

    def head_naive():
        logits = head(hidden).float()  # [1, T, V]
        logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)  # [1, T-1]
        (logp * mask[:, 1:]).sum().backward()

    def head_fixrl(n: int | None = None):
        r, c = (rows, cols) if n is None else (rows[:n], cols[:n])
        logp, _ = head_log_probs(head, hidden[r, c - 1], ids[r, c], 1.0, cfg.chunk_size)
        logp.sum().backward()

    run = {"step_naive": step_naive, "step_fixrl": step_fixrl, "step_per_turn": step_per_turn,
           "head_naive": head_naive, "head_fixrl": head_fixrl,
           "head_chunk": lambda: head_fixrl(largest_chunk(len(rows), cfg.chunk_size))}[name]
    # warm-up: thread pools, BLAS and allocator paths, on a short prefix
    reply_log_probs(model, ids[:, :64], torch.cat([torch.zeros(1, 32), torch.ones(1, 32)], 1).long()).sum().backward()
    model.zero_grad(set_to_none=True)
    gc.collect()
    before = status_mib("VmRSS")
    exact = reset_peak()
    t0, c0 = time.perf_counter(), cpu_seconds()
    run()
    seconds, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    peak = status_mib("VmHWM")
    return {"method": name, "peak_mib": peak - before, "seconds": seconds, "cpu_seconds": cpu,
            "threads": torch.get_num_threads(), "exact_peak": exact,
            "tokens": T, "reply_tokens": int(mask.sum()), "layers": layer_count(cfg.layers)}


# ----------------------------------------------------------------------------- driver side
def _measure(name: str, cfg: Config) -> dict:
    try:
        return run_worker("fixrl.harness.bench.logprobs", [name, json.dumps(asdict(cfg))], cfg.timeout)
    except WorkerFailed as e:
        raise BenchError(f"bench logprobs: {name} failed ({e}); --timeout sets the seconds per measurement") from None


def naive_need_gib(tokens: int, layers: int) -> tuple[float, float]:
    """Estimated GiB the naive baselines need: (head stage alone: ~4 live [T, V] float32 tensors,
    the whole naive step: that plus every layer's activations kept for the backward pass, about
    T x (12 H + 5 I) float32 a layer); each with 2 GiB for the process itself."""
    head = 4 * tokens * VOCAB * 4 / 2**30 + 2
    return head, head + layers * tokens * (12 * HIDDEN + 5 * INTERMEDIATE) * 4 / 2**30


def _plan(cfg: Config, layers: int) -> dict[str, str]:
    """Workers to skip (name -> why); BenchError when even the naive head stage cannot fit."""
    avail = available_gib()
    if avail is None:
        return {}
    head, step = naive_need_gib(cfg.tokens, layers)
    if avail < head:
        raise BenchError(f"the naive baseline's head stage needs about {head:.1f} GiB and {avail:.1f} GiB is "
                         "available; free memory or pass a smaller --tokens (and --reply-tokens)")
    if avail < step:
        return {"step_naive": f"not run: needs about {step:.1f} GiB ({layers} layers' activations and the "
                              f"[T, V] logits), {avail:.1f} GiB available"}
    return {}


def _ratios(results: dict, layers: int) -> dict[str, float]:
    step = {k: results.get(f"step_{k}") for k in ("naive", "per_turn", "fixrl")}
    headm = {k: results[f"head_{k}"] for k in ("naive", "fixrl", "chunk")}
    r = {
        "logits_memory_naive_over_fixrl": headm["naive"]["peak_mib"] / headm["fixrl"]["peak_mib"],
        "logits_memory_fixrl_over_one_chunk": headm["fixrl"]["peak_mib"] / headm["chunk"]["peak_mib"],
        "time_per_turn_over_fixrl": step["per_turn"]["cpu_seconds"] / step["fixrl"]["cpu_seconds"],
        "wall_time_per_turn_over_fixrl": step["per_turn"]["seconds"] / step["fixrl"]["seconds"],
    }
    if "peak_mib" in (step["naive"] or {}):
        r["step_memory_naive_over_fixrl"] = step["naive"]["peak_mib"] / step["fixrl"]["peak_mib"]
        r["time_naive_over_fixrl"] = step["naive"]["cpu_seconds"] / step["fixrl"]["cpu_seconds"]
    if layers < REAL_LAYERS:
        # The head's work is the same in (b) and (c) (the same reply positions); the rest is the
        # decoder, linear in the layer count: project the ratio to the real model's 24 layers.
        head_s = headm["fixrl"]["cpu_seconds"]
        per_layer = {k: max(step[k]["cpu_seconds"] - head_s, 0.0) / layers for k in ("per_turn", "fixrl")}
        r[f"time_per_turn_over_fixrl_projected_{REAL_LAYERS}_layers"] = (
            (REAL_LAYERS * per_layer["per_turn"] + head_s) / (REAL_LAYERS * per_layer["fixrl"] + head_s))
    return r


def measure(cfg: Config) -> dict[str, Any]:
    layers = layer_count(cfg.layers)
    try:
        spans = layout(cfg.tokens, cfg.reply_tokens, cfg.turns, cfg.prompt_tokens)
    except ValueError as e:
        raise BenchError(str(e)) from None
    skip = _plan(cfg, layers)
    results = {}
    for name in WORKERS:
        if name in skip:
            results[name] = {"method": name, "skipped": skip[name]}
            continue
        print(f"measuring {name} ...", file=sys.stderr, flush=True)
        results[name] = _measure(name, cfg)
    chunk_rows = largest_chunk(sum(b - a for a, b in spans), cfg.chunk_size)
    r = {
        "model": f"Qwen2.5-0.5B dimensions, random weights, {layers} of {REAL_LAYERS} decoder layers, "
                 "LoRA r=16 on all linear layers, float32 on CPU",
        "trajectory": {"tokens": spans[-1][1], "reply_tokens": results["step_fixrl"]["reply_tokens"],
                       "turns": len(spans), "chunk_size": cfg.chunk_size},
        "time_method": f"CPU seconds of the step (getrusage user+sys, {cfg.threads} torch thread(s)); "
                       "wall seconds beside it",
        "memory_method": "peak RSS above the pre-step RSS, one subprocess per measurement (VmHWM reset via "
                         "/proc/self/clear_refs; glibc mmap threshold 128 KiB so freed tensors leave RSS)",
        "one_tensor_mib": {"T_x_V_float32": spans[-1][1] * VOCAB * 4 / 2**20,
                           "chunk_x_V_float32": chunk_rows * VOCAB * 4 / 2**20},
        "results": results,
        "ratios": _ratios(results, layers),
    }
    ratios = r["ratios"]
    r["targets"] = {
        "logits memory >= 9x below naive": ratios["logits_memory_naive_over_fixrl"] >= 9,
        "logits memory within 1.2x of one chunk": ratios["logits_memory_fixrl_over_one_chunk"] <= 1.2,
        "time >= 3x below one forward per turn": ratios["time_per_turn_over_fixrl"] >= 3,
    }
    r["exact_peaks"] = all(x["exact_peak"] for x in results.values() if "exact_peak" in x)
    return r


def show(r: dict, c) -> None:
    t = r["trajectory"]
    c.print(f"[bold]fixrl bench logprobs[/]: {r['model']}")
    c.print(f"trajectory: {t['tokens']} tokens, {t['reply_tokens']} of them the model's, {t['turns']} turns; "
            f"chunk {t['chunk_size']} positions")
    c.print(f"memory: {r['memory_method']}", markup=False)
    c.print(f"time: {r['time_method']}", markup=False)
    if not r["exact_peaks"]:
        c.print("[yellow]warning: could not reset the peak-RSS counter; peaks may include set-up[/]")
    res = r["results"]
    table = Table(title="forward + backward of the reply tokens' log-probs")
    for col in ("method", "peak MiB", "CPU s", "wall s"):
        table.add_column(col, justify="right" if col != "method" else "left")
    names = {"step_naive": "(a) naive full-sequence float32 log-softmax",
             "step_per_turn": "(b) one forward per turn",
             "step_fixrl": "(c) fixrl: one forward, checkpointed, chunked head",
             "head_naive": "logits stage (a): head + log-softmax on all T",
             "head_fixrl": "logits stage (c): fixrl's chunked head",
             "head_chunk": "logits stage: fixrl's largest chunk alone"}
    for key in ("step_naive", "step_per_turn", "step_fixrl", "head_naive", "head_fixrl", "head_chunk"):
        if "skipped" in res[key]:
            table.add_row(names[key], res[key]["skipped"], "-", "-")
            continue
        table.add_row(names[key], f"{res[key]['peak_mib']:.0f}", f"{res[key]['cpu_seconds']:.1f}",
                      f"{res[key]['seconds']:.1f}")
    c.print(table)
    one = r["one_tensor_mib"]
    c.print(f"for scale: one [T, V] float32 tensor is {one['T_x_V_float32']:.0f} MiB; one [chunk, V] "
            f"{one['chunk_x_V_float32']:.0f} MiB", markup=False)
    for k, v in r["ratios"].items():
        c.print(f"  {k}: {v:.2f}")
    for k, ok in r["targets"].items():
        c.print(f"  target {k}: {'[green]met[/]' if ok else '[red]missed[/]'}")


if __name__ == "__main__":  # a measurement subprocess: `python -m ... WORKER CONFIG_JSON`
    worker, config = sys.argv[1:]
    print(json.dumps(_worker(worker, Config(**json.loads(config)))))

"""`fixrl bench grpo-step`: one whole GRPO update at Qwen2.5's real sizes on the CPU, and the
memory model those measurements calibrate.

What runs (`train/bench_update.py` measures, one fresh subprocess per size and precision):
- the whole update, `train.grpo.grpo_update` (forward, backward, AdamW step; LoRA r16 on every
  linear layer; one forward over one 6-turn trajectory of 5,600 tokens, 600 of them the
  model's), at Qwen2.5-0.5B's and 1.5B's full configurations with random weights: peak RSS,
  CPU seconds of one torch thread, wall seconds; in bf16 and in fp32 by default. bf16 stands in
  for the T4's fp16: the same bytes per weight and activation, and this machine's CPUs multiply
  bfloat16 ~3x faster than float32 but float16 ~40x slower (no AVX512-FP16), so a full-size fp16
  update would take hours here. The fp16 code path itself is tested on the tiny checkpoint
  (tests/train/test_precision.py). A size that would not fit in the memory available is not run,
  and the output says so.
- the memory model's two measured terms (`train/memory_model.py`) for 0.5B, 1.5B and 3B at 5,600
  and 8,000 tokens, on one-layer models of each shape (cheap), and from them the predicted peak
  of an fp16 LoRA update on a GPU beside the T4's 15 GB. The model is checked here against every
  whole update measured (predicted / measured total), and on a GPU by `fixrl bench gpu`.
The comparison made in the same run is bf16 against fp32 (memory and time of the same update).
"""
from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console
from rich.table import Table

from fixrl.harness.agent.precision import PRECISIONS
from fixrl.sandbox.bench import BenchError
from fixrl.train.bench_logprobs import layout
from fixrl.train.bench_proc import WorkerFailed, available_gib, run_worker
from fixrl.train.memory_model import GIB, QWEN25, SHAPES, T4_BYTES, ModelShape, predict

MIB = 2 ** 20
WORKER = "fixrl.train.bench_update"


def _list(kind, choices=None):
    def parse(text: str) -> list:
        items = [kind(x.strip()) for x in text.split(",") if x.strip()]
        bad = [x for x in items if choices is not None and x not in choices]
        if not items or bad:
            raise argparse.ArgumentTypeError(f"{text!r}: give a comma-separated list of "
                                             f"{', '.join(map(str, choices)) if choices else 'numbers'}")
        return items
    return parse


def add_shape_arguments(parser, sizes: str, tokens: str) -> None:
    """The options `grpo-step` and `gpu` share: what is measured, at what size."""
    parser.add_argument("--sizes", type=_list(str, sorted(SHAPES)), default=_list(str)(sizes),
                        help=f"model sizes, comma-separated, of {', '.join(sorted(SHAPES))} (default {sizes})")
    parser.add_argument("--tokens", type=_list(int), default=_list(int)(tokens),
                        help=f"trajectory lengths of the whole update, comma-separated (default {tokens})")
    parser.add_argument("--reply-tokens", type=int, default=600, help="tokens the policy sampled (default 600)")
    parser.add_argument("--turns", type=int, default=6, help="assistant turns (default 6)")
    parser.add_argument("--prompt-tokens", type=int, default=1000, help="system prompt + tools + issue")
    parser.add_argument("--chunk-size", type=int, default=256, help="reply positions per output-head chunk")
    parser.add_argument("--lora-rank", type=int, default=16)
    parser.add_argument("--layers", type=int, default=None,
                        help="decoder layers of every size (default: each size's own; fewer for a quick run)")


def add_arguments(parser) -> None:
    add_shape_arguments(parser, "0.5b,1.5b", "5600")
    parser.add_argument("--precisions", type=_list(str, PRECISIONS), default=["bf16", "fp32"],
                        help="precisions of the whole update, comma-separated (default bf16,fp32; fp16 on a CPU "
                             "without AVX512-FP16 is ~40x slower)")
    parser.add_argument("--model-sizes", type=_list(str, sorted(SHAPES)), default=list(QWEN25),
                        help="sizes the memory model predicts (default 0.5b,1.5b,3b)")
    parser.add_argument("--model-tokens", type=_list(int), default=[5600, 8000],
                        help="lengths the memory model predicts (default 5600,8000)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: CPU time is the work done)")
    parser.add_argument("--timeout", type=float, default=7200, help="seconds per measurement subprocess")


def shape_of(size: str, layers: int | None) -> ModelShape:
    shape = SHAPES[size]
    return shape.with_layers(layers) if layers else shape


def check_layouts(args, lengths: list[int]) -> None:
    for t in lengths:
        try:
            layout(t, args.reply_tokens, args.turns, args.prompt_tokens)
        except ValueError as e:
            raise BenchError(f"--tokens {t}: {e} (--reply-tokens, --turns, --prompt-tokens)") from None


def worker_argv(size: str, args, precision: str, tokens: list[int], *, parts: bool, steps: bool,
                device: str = "cpu", cap_bytes: int | None = None, threads: int = 1) -> list[str]:
    argv = ["--size", size, "--precision", precision, "--device", device, "--tokens", ",".join(map(str, tokens)),
            "--reply-tokens", str(args.reply_tokens), "--turns", str(args.turns), "--prompt-tokens",
            str(args.prompt_tokens), "--chunk-size", str(args.chunk_size), "--lora-rank", str(args.lora_rank),
            "--threads", str(threads)]
    if args.layers:
        argv += ["--layers", str(args.layers)]
    if cap_bytes:
        argv += ["--cap-bytes", str(int(cap_bytes))]
    return argv + (["--parts"] if parts else []) + (["--steps"] if steps else [])


def predicted(shape: ModelShape, tokens: int, precision: str, parts: dict, rank: int):
    """The memory model's terms from a worker's measured parts."""
    layer = parts["layer"][str(tokens)]["peak_mib"] * MIB
    head = parts["head"]["peak_mib"] * MIB
    return predict(shape, tokens, precision, head_chunk=head, layer=layer, rank=rank)


def _say(args, text: str) -> None:
    if not getattr(args, "json", False):
        print(text, file=sys.stderr, flush=True)


def _measure(args, size: str, precision: str, tokens: list[int], **kw) -> dict:
    try:
        return run_worker(WORKER, worker_argv(size, args, precision, tokens, threads=args.threads, **kw), args.timeout)
    except WorkerFailed as e:
        return {"size": size, "precision": precision, "error": f"the measurement failed: {e}"}


def measure_parts(args) -> dict[tuple[str, str], dict]:
    """The memory model's measured terms, by (size, precision): bf16 (for fp16) for every size it
    predicts, and each precision of each update measured (to check the model against it)."""
    lengths = sorted(set(args.model_tokens) | set(args.tokens))
    wanted = [(s, "bf16") for s in args.model_sizes] + [(s, p) for s in args.sizes for p in args.precisions]
    out = {}
    for size, precision in dict.fromkeys(wanted):
        _say(args, f"measuring the memory model's parts at {size}, {precision} ...")
        r = _measure(args, size, precision, lengths, parts=True, steps=False)
        if "parts" not in r:
            raise BenchError(f"bench grpo-step: the parts of {size} ({precision}) could not be measured: "
                             f"{r.get('error')}")
        out[size, precision] = r["parts"]
    return out


def measure_updates(args, parts: dict[tuple[str, str], dict]) -> list[dict]:
    """The whole update for each size and precision that fits in the memory available."""
    runs = []
    for size in args.sizes:
        shape = shape_of(size, args.layers)
        for precision in args.precisions:
            terms = [predicted(shape, t, precision, parts[size, precision], args.lora_rank) for t in args.tokens]
            need = max(t.total for t in terms) * 1.1 / GIB + 1.5  # + the interpreter, libraries, margin
            avail = available_gib()
            if avail is not None and need > avail:
                runs.append({"size": size, "precision": precision, "skipped": f"does not fit in this machine's "
                             f"memory: needs about {need:.1f} GiB, {avail:.1f} GiB available"})
                continue
            _say(args, f"measuring one GRPO update at {size}, {precision} ...")
            r = _measure(args, size, precision, args.tokens, parts=False, steps=True)
            for t, term in zip(args.tokens, terms):
                step = (r.get("steps") or {}).get(str(t))
                if step and step.get("fits"):
                    step["model_total_mib"] = term.total / MIB
                    step["model_over_measured"] = term.total / MIB / step["total_mib"]
            runs.append(r)
    return runs


def run(args) -> int:
    check_layouts(args, sorted(set(args.model_tokens) | set(args.tokens)))
    parts = measure_parts(args)
    predictions = []
    for size in args.model_sizes:
        for t in args.model_tokens:
            terms = predicted(SHAPES[size], t, "fp16", parts[size, "bf16"], args.lora_rank)
            predictions.append({"size": size, "shape": SHAPES[size].name, "tokens": t, "gib": terms.as_gib(),
                                "fits_t4": terms.total <= T4_BYTES})
    runs = measure_updates(args, parts)
    r = {"what": "one GRPO update (grpo_update: forward, backward, AdamW; LoRA r16 all-linear; one forward over one "
                 f"{args.turns}-turn trajectory) at Qwen2.5 shapes with random weights, CPU, {args.threads} torch "
                 "thread(s)",
         "memory_method": "peak RSS above the RSS before any model (fresh subprocess each; train/bench_proc.py)",
         "updates": runs, "ratios": _ratios(runs, args.tokens[0]),
         "memory_model": {"what": "predicted peak of an fp16 LoRA update on a GPU (train/memory_model.py): weights + "
                                  "adapter and AdamW + checkpointed block inputs + max(one head chunk, one layer's "
                                  "backward), the last two measured here in bf16 on one-layer models",
                          "t4_gb": T4_BYTES / 1e9, "predictions": predictions},
         "parts": {f"{size} {precision}": p for (size, precision), p in parts.items()}}
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        _print(r)
    return 0


def _ratios(runs: list[dict], tokens: int) -> dict[str, float]:
    """bf16 over fp32, memory and CPU time of the same update, per size (the in-run comparison)."""
    by = {(x["size"], x["precision"]): (x.get("steps") or {}).get(str(tokens)) for x in runs}
    out = {}
    for size in dict.fromkeys(x["size"] for x in runs):
        lo, hi = by.get((size, "bf16")), by.get((size, "fp32"))
        if lo and hi and lo.get("fits") and hi.get("fits"):
            out[f"{size}_memory_bf16_over_fp32"] = lo["total_mib"] / hi["total_mib"]
            out[f"{size}_cpu_time_fp32_over_bf16"] = hi["cpu_seconds"] / lo["cpu_seconds"]
    return out


def _print(r: dict) -> None:
    c = Console(width=150)
    c.print(f"[bold]fixrl bench grpo-step[/]: {r['what']}", markup=True)
    c.print(f"memory: {r['memory_method']}", markup=False)
    t = Table(title="one whole GRPO update, measured")
    cols = ("size", "precision", "tokens", "weights MiB", "peak MiB", "CPU s", "wall s", "loss", "model / measured")
    for col in cols:
        t.add_column(col, justify="left" if col in ("size", "precision") else "right")
    for run in r["updates"]:
        if "steps" not in run:
            t.add_row(run["size"], run["precision"], "-", run.get("skipped") or run.get("error", "?"), *[""] * 5)
            continue
        for tokens, s in run["steps"].items():
            if not s.get("fits"):
                t.add_row(run["size"], run["precision"], tokens, "-", s.get("error", "?"), "", "", "", "")
                continue
            t.add_row(run["size"], run["precision"], tokens, f"{run['weights_mib']:.0f}", f"{s['total_mib']:.0f}",
                      f"{s['cpu_seconds']:.1f}", f"{s['seconds']:.1f}", f"{s['loss']:+.3f}",
                      f"{s['model_over_measured']:.2f}")
    c.print(t)
    for k, v in r["ratios"].items():
        c.print(f"  {k}: {v:.2f}")
    m = r["memory_model"]
    t = Table(title=f"predicted peak GPU memory, fp16 + LoRA r16, GiB (a T4 holds {m['t4_gb']:.0f} GB)")
    for col in ("model", "tokens", "weights", "adapter+AdamW", "checkpointed", "head chunk", "layer", "total",
                "fits a T4"):
        t.add_column(col, justify="left" if col == "model" else "right")
    for p in m["predictions"]:
        g = p["gib"]
        t.add_row(p["shape"], str(p["tokens"]), *(f"{g[k]:.2f}" for k in ("weights", "adapter_and_optimizer",
                                                                         "checkpointed", "head_chunk", "layer",
                                                                         "total")),
                  "yes" if p["fits_t4"] else "no")
    c.print(t)

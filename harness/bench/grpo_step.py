"""`fixrl bench grpo-step`: one whole GRPO update at Qwen2.5's real sizes on the CPU, and the
memory model those measurements calibrate.

What runs (`update_worker.py` measures, one fresh subprocess per size and precision):
- the whole update, `train.grpo.grpo_update` (forward, backward, AdamW step; LoRA r16 on every
  linear layer; one forward over one 6-turn trajectory of 5,600 tokens, 600 of them the
  model's), at Qwen2.5-0.5B's and 1.5B's full configurations with random weights: peak RSS,
  CPU seconds of one torch thread, wall seconds; in bf16 and in fp32 by default. bf16 stands in
  for the T4's fp16: the same bytes per weight and activation, while a CPU without AVX512-FP16
  multiplies float16 in software, far slower than bfloat16 (docs/benchmarks.md has the figures).
  The fp16 code path itself is tested on the tiny checkpoint
  (tests/train/test_precision.py). A size that would not fit in the memory available is not run,
  and the output says so.
- the memory model's two measured terms (`train/memory_model.py`) for 0.5B, 1.5B and 3B at 5,600
  and 8,000 tokens, on one-layer models of each shape (cheap), and from them the predicted peak
  of an fp16 LoRA update on a GPU beside the T4's 15 GB. The model is checked here against every
  whole update measured (predicted / measured total), and on a GPU by `fixrl bench gpu`.
The comparison made in the same run is bf16 against fp32 (memory and time of the same update).
Not guaranteed: CPU seconds say nothing of a GPU's speed, and random weights nothing of a
trained model's loss; the memory figures are the process's peak RSS, not a GPU allocator's.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table

from fixrl.harness.bench.errors import BenchError
from fixrl.harness.bench.logprobs import layout
from fixrl.harness.bench.proc import WorkerFailed, available_gib, run_worker
from fixrl.harness.model.precision import PRECISIONS
from fixrl.train.memory_model import GIB, QWEN25, SHAPES, T4_BYTES, ModelShape, predict

MIB = 2 ** 20
WORKER = "fixrl.harness.bench.update_worker"


@dataclass
class ShapeConfig:
    """What `bench grpo-step` and `bench gpu` share: what is measured, at what size."""

    sizes: list[str] = field(default_factory=lambda: ["0.5b", "1.5b"])
    """Model sizes of the whole update (0.5b, 1.5b, 3b or tiny), comma-separated."""
    tokens: list[int] = field(default_factory=lambda: [5600])
    """Trajectory lengths of the whole update, comma-separated."""
    reply_tokens: int = 600
    """Tokens the policy sampled."""
    turns: int = 6
    """Assistant turns."""
    prompt_tokens: int = 1000
    """System prompt + tools + issue."""
    chunk_size: int = 256
    """Reply positions per output-head chunk."""
    lora_rank: int = 16
    """LoRA rank of the adapter (all linear layers)."""
    layers: int | None = None
    """Decoder layers of every size (None: each size's own; fewer for a quick run)."""

    def validate(self, lengths: list[int]) -> None:
        """BenchError naming the flag for sizes that do not exist and trajectories that cannot be laid out."""
        check_choices("--sizes", self.sizes, sorted(SHAPES))
        for t in lengths:
            try:
                layout(t, self.reply_tokens, self.turns, self.prompt_tokens)
            except ValueError as e:
                raise BenchError(f"--tokens {t}: {e} (--reply-tokens, --turns, --prompt-tokens)") from None


def check_choices(flag: str, given: list[str], allowed: list[str] | tuple[str, ...]) -> None:
    if not given or any(x not in allowed for x in given):
        raise BenchError(f"{flag} {','.join(given)}: give a comma-separated list of {', '.join(allowed)}")


@dataclass
class Config(ShapeConfig):
    """`fixrl bench grpo-step`."""

    precisions: list[str] = field(default_factory=lambda: ["bf16", "fp32"])
    """Precisions of the whole update, comma-separated (fp16 on a CPU without AVX512-FP16 is emulated: very slow)."""
    model_sizes: list[str] = field(default_factory=lambda: list(QWEN25))
    """Sizes the memory model predicts."""
    model_tokens: list[int] = field(default_factory=lambda: [5600, 8000])
    """Lengths the memory model predicts."""
    threads: int = 1
    """Torch threads (1: CPU time is the work done)."""
    timeout: float = 7200
    """Seconds per measurement subprocess."""


def shape_of(size: str, layers: int | None) -> ModelShape:
    shape = SHAPES[size]
    return shape.with_layers(layers) if layers else shape


def worker_argv(size: str, cfg: ShapeConfig, precision: str, tokens: list[int], *, parts: bool, steps: bool,
                device: str = "cpu", cap_bytes: int | None = None, threads: int = 1) -> list[str]:
    argv = ["--size", size, "--precision", precision, "--device", device, "--tokens", ",".join(map(str, tokens)),
            "--reply-tokens", str(cfg.reply_tokens), "--turns", str(cfg.turns), "--prompt-tokens",
            str(cfg.prompt_tokens), "--chunk-size", str(cfg.chunk_size), "--lora-rank", str(cfg.lora_rank),
            "--threads", str(threads)]
    if cfg.layers:
        argv += ["--layers", str(cfg.layers)]
    if cap_bytes:
        argv += ["--cap-bytes", str(int(cap_bytes))]
    return argv + (["--parts"] if parts else []) + (["--steps"] if steps else [])


def predicted(shape: ModelShape, tokens: int, precision: str, parts: dict, rank: int):
    """The memory model's terms from a worker's measured parts."""
    layer = parts["layer"][str(tokens)]["peak_mib"] * MIB
    head = parts["head"]["peak_mib"] * MIB
    return predict(shape, tokens, precision, head_chunk=head, layer=layer, rank=rank)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _measure(cfg: Config, size: str, precision: str, tokens: list[int], **kw) -> dict:
    try:
        return run_worker(WORKER, worker_argv(size, cfg, precision, tokens, threads=cfg.threads, **kw), cfg.timeout)
    except WorkerFailed as e:
        return {"size": size, "precision": precision, "error": f"the measurement failed: {e}"}


def measure_parts(cfg: Config) -> dict[tuple[str, str], dict]:
    """The memory model's measured terms, by (size, precision): bf16 (for fp16) for every size it
    predicts, and each precision of each update measured (to check the model against it)."""
    lengths = sorted(set(cfg.model_tokens) | set(cfg.tokens))
    wanted = [(s, "bf16") for s in cfg.model_sizes] + [(s, p) for s in cfg.sizes for p in cfg.precisions]
    out = {}
    for size, precision in dict.fromkeys(wanted):
        _say(f"measuring the memory model's parts at {size}, {precision} ...")
        r = _measure(cfg, size, precision, lengths, parts=True, steps=False)
        if "parts" not in r:
            raise BenchError(f"bench grpo-step: the parts of {size} ({precision}) could not be measured: "
                             f"{r.get('error')}")
        out[size, precision] = r["parts"]
    return out


def measure_updates(cfg: Config, parts: dict[tuple[str, str], dict]) -> list[dict]:
    """The whole update for each size and precision that fits in the memory available."""
    runs = []
    for size in cfg.sizes:
        shape = shape_of(size, cfg.layers)
        for precision in cfg.precisions:
            terms = [predicted(shape, t, precision, parts[size, precision], cfg.lora_rank) for t in cfg.tokens]
            need = max(t.total for t in terms) * 1.1 / GIB + 1.5  # + the interpreter, libraries, margin
            avail = available_gib()
            if avail is not None and need > avail:
                runs.append({"size": size, "precision": precision, "skipped": f"does not fit in this machine's "
                             f"memory: needs about {need:.1f} GiB, {avail:.1f} GiB available"})
                continue
            _say(f"measuring one GRPO update at {size}, {precision} ...")
            r = _measure(cfg, size, precision, cfg.tokens, parts=False, steps=True)
            for t, term in zip(cfg.tokens, terms):
                step = (r.get("steps") or {}).get(str(t))
                if step and step.get("fits"):
                    step["model_total_mib"] = term.total / MIB
                    step["model_over_measured"] = term.total / MIB / step["total_mib"]
            runs.append(r)
    return runs


def measure(cfg: Config) -> dict[str, Any]:
    check_choices("--precisions", cfg.precisions, PRECISIONS)
    check_choices("--model-sizes", cfg.model_sizes, sorted(SHAPES))
    cfg.validate(sorted(set(cfg.model_tokens) | set(cfg.tokens)))
    parts = measure_parts(cfg)
    predictions = []
    for size in cfg.model_sizes:
        for t in cfg.model_tokens:
            terms = predicted(SHAPES[size], t, "fp16", parts[size, "bf16"], cfg.lora_rank)
            predictions.append({"size": size, "shape": SHAPES[size].name, "tokens": t, "gib": terms.as_gib(),
                                "fits_t4": terms.total <= T4_BYTES})
    runs = measure_updates(cfg, parts)
    r = {"what": "one GRPO update (grpo_update: forward, backward, AdamW; LoRA r16 all-linear; one forward over one "
                 f"{cfg.turns}-turn trajectory) at Qwen2.5 shapes with random weights, CPU, {cfg.threads} torch "
                 "thread(s)",
         "memory_method": "peak RSS above the RSS before any model (fresh subprocess each; harness/bench/proc.py)",
         "updates": runs, "ratios": _ratios(runs, cfg.tokens[0]),
         "memory_model": {"what": "predicted peak of an fp16 LoRA update on a GPU (train/memory_model.py): weights + "
                                  "adapter and AdamW + checkpointed block inputs + max(one head chunk, one layer's "
                                  "backward), the last two measured here in bf16 on one-layer models",
                          "t4_gb": T4_BYTES / 1e9, "predictions": predictions},
         "parts": {f"{size} {precision}": p for (size, precision), p in parts.items()}}
    return r


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


def show(r: dict, c) -> None:
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

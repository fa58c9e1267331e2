"""`fixrl bench gpu` (`make bench-gpu`): the T4 check, prepared for any CUDA machine.

Caps the process at a T4's memory (`torch.cuda.set_per_process_memory_fraction` to 15 GB of the
device's total: `memory_model.T4_BYTES`), then, for Qwen2.5-0.5B, 1.5B and 3B with random weights,
each size in a fresh subprocess (`update_worker.py`: an out-of-memory or a crash in one
leaves the others to run):
- the memory model's measured terms on a one-layer model of the size, on the GPU;
- one fp16 GRPO update (`grpo_update`: fp16 frozen weights, float32 LoRA r16, fp16 autocast,
  the GradScaler; one forward over one 6-turn trajectory) at 5,600 and 8,000 tokens, after a
  warm-up update: peak allocated and reserved memory, step seconds, and whether it fit.
Writes everything to one JSON file (`--out`), with the memory model's prediction beside each
measurement, and prints a table. Sizes run smallest first under a deadline (`--deadline`, 480 s
by default); a size the deadline leaves no time for is recorded as not run. Not guaranteed: step
seconds are the GPU's it runs on, not a T4's; only the memory cap stands in for a T4.

`--device cpu` runs the same driver and workers on the CPU (`--layers 2 --sizes tiny` for a dry
run in a test): the cap becomes an address-space limit, memory is peak RSS, and fp16 there is
slow (CPUs without AVX512-FP16 multiply float16 in software).
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rich.table import Table

from fixrl.harness.bench.errors import BenchError
from fixrl.harness.bench.grpo_step import MIB, WORKER, ShapeConfig, predicted, shape_of, worker_argv
from fixrl.harness.bench.proc import WorkerFailed, run_worker
from fixrl.train.memory_model import T4_BYTES

MIN_SECONDS = 30
"""A size is started only with at least this much of the deadline left."""


@dataclass
class Config(ShapeConfig):
    """`fixrl bench gpu`."""

    sizes: list[str] = field(default_factory=lambda: ["0.5b", "1.5b", "3b"])
    """Model sizes (0.5b, 1.5b, 3b or tiny), comma-separated, run smallest first."""
    tokens: list[int] = field(default_factory=lambda: [5600, 8000])
    """Trajectory lengths, comma-separated."""
    device: str = "cuda"
    """cuda, cuda:N, or cpu (a dry run)."""
    precision: Literal["fp16", "bf16", "fp32"] = "fp16"
    """Precision of the update (fp16: the T4 path)."""
    cap_gb: float = T4_BYTES / 1e9
    """Memory cap in GB (a T4's by default); 0: none."""
    out: str = "runs/bench-gpu.json"
    """The JSON file to write."""
    deadline: float = 480
    """Seconds for the whole check."""
    timeout: float = 300
    """Seconds per size at most."""
    threads: int | None = None
    """Torch threads (None: torch's own)."""


def _check_device(device: str) -> dict:
    import torch  # noqa: PLC0415 - the command line imports this bench for its flags

    info = {"device": device, "torch": torch.__version__, "cuda": torch.version.cuda}
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise BenchError(f"bench gpu: no CUDA device (torch {torch.__version__}); run it on a GPU machine with a "
                             "CUDA build of torch installed, or pass --device cpu for a dry run")
        props = torch.cuda.get_device_properties(torch.device(device))
        info.update(name=props.name, total_bytes=props.total_memory)
    elif device != "cpu":
        raise BenchError(f"bench gpu: --device {device!r}: use cuda, cuda:N or cpu")
    return info


def _compare(run: dict, cfg: Config) -> list[dict]:
    """One row per length: the measurement beside the memory model's prediction."""
    rows = []
    shape = shape_of(run["size"], cfg.layers)
    for t in cfg.tokens:
        row = {"size": run["size"], "model": shape.name, "tokens": t}
        step = (run.get("steps") or {}).get(str(t))
        if step is None:  # the size did not get to this step: out of memory before it (fits: no), or not run
            row.update(fits=False if run.get("oom") else None, error=run.get("error") or "not measured")
        elif not step.get("fits"):
            row.update(fits=False, error=step.get("error"), peak_allocated_mib=step.get("total_mib"))
        else:
            row.update(fits=True, peak_allocated_mib=step["total_mib"], reserved_mib=step.get("reserved_mib"),
                       step_seconds=step["seconds"], loss=step["loss"], skipped_steps=step["skipped_steps"],
                       loss_scale=step["loss_scale"])
        if "parts" in run:
            terms = predicted(shape, t, cfg.precision, run["parts"], cfg.lora_rank)
            row["predicted_mib"] = terms.total / MIB
            row["predicted_terms_gib"] = terms.as_gib()
            if row.get("fits"):
                row["predicted_over_measured"] = row["predicted_mib"] / row["peak_allocated_mib"]
        rows.append(row)
    return rows


def _run_sizes(cfg: Config, cap_bytes: int | None, started: float) -> list[dict]:
    runs = []
    for size in cfg.sizes:
        left = cfg.deadline - (time.monotonic() - started)
        if left < MIN_SECONDS:
            runs.append({"size": size, "error": f"not run: {left:.0f}s of the {cfg.deadline:.0f}s deadline left"})
            continue
        print(f"bench gpu: {size} ...", file=sys.stderr, flush=True)
        threads = cfg.threads or os.cpu_count() or 1
        argv = worker_argv(size, cfg, cfg.precision, cfg.tokens, parts=True, steps=True, device=cfg.device,
                           cap_bytes=cap_bytes, threads=threads)
        t0 = time.monotonic()
        try:
            r = run_worker(WORKER, argv, min(cfg.timeout, left))
        except WorkerFailed as e:
            r = {"size": size, "error": f"the size's subprocess failed: {e}"}
        r["wall_seconds"] = time.monotonic() - t0
        runs.append(r)
    return runs


def measure(cfg: Config) -> dict[str, Any]:
    cfg.validate(cfg.tokens)
    info = _check_device(cfg.device)
    started = time.monotonic()
    cap_bytes = int(cfg.cap_gb * 1e9) if cfg.cap_gb > 0 else None
    runs = _run_sizes(cfg, cap_bytes, started)
    rows = [row for r in runs for row in _compare(r, cfg)]
    report = {"what": f"one {cfg.precision} GRPO update per size and length (grpo_update, LoRA r{cfg.lora_rank}, "
                      f"one forward over one {cfg.turns}-turn trajectory of which {cfg.reply_tokens} tokens are the "
                      "model's), random weights, each size in a fresh subprocess",
              "machine": info, "cap_bytes": cap_bytes, "precision": cfg.precision,
              "memory": "peak allocated by torch's caching allocator (CUDA), peak RSS above the interpreter (CPU)",
              "seconds": time.monotonic() - started, "deadline_seconds": cfg.deadline, "results": rows, "runs": runs}
    report["out"] = cfg.out
    _write(Path(cfg.out), report)
    return report


def _write(path: Path, report: dict) -> None:
    """Atomically: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(path)


def show(report: dict, c) -> None:
    m = report["machine"]
    cap = report["cap_bytes"]
    c.print(f"fixrl bench gpu: {m.get('name', m['device'])}, torch {m['torch']}, cap "
            f"{cap / 1e9:.1f} GB" if cap else "no cap", markup=False)
    t = Table(title=report["what"])
    for col in ("model", "tokens", "fits", "peak allocated MiB", "predicted MiB", "predicted / measured", "step s",
                "loss"):
        t.add_column(col, justify="left" if col == "model" else "right")
    for r in report["results"]:
        fits = {True: "yes", False: "NO", None: "-"}[r["fits"]]

        def f(key, fmt, r=r):
            return "-" if r.get(key) is None else fmt.format(r[key])

        t.add_row(r["model"], str(r["tokens"]), fits, f("peak_allocated_mib", "{:.0f}"), f("predicted_mib", "{:.0f}"),
                  f("predicted_over_measured", "{:.2f}"), f("step_seconds", "{:.2f}"), f("loss", "{:+.3f}"))
        if r.get("error"):
            t.add_row("", "", "", r["error"][:100], "", "", "", "")
    c.print(t)
    c.print(f"written to {report['out']} ({report['seconds']:.0f}s)", markup=False)

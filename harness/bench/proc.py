"""Measuring one step in a fresh subprocess: peak RSS, CPU seconds, and the worker plumbing the
train-side benches share (`fixrl bench logprobs | grpo-step | gpu`).

Why a subprocess per measurement: torch's CPU allocator keeps no statistics and tracemalloc does
not see it, so a worker builds its model, resets the kernel's peak-RSS counter (writing 5 to
/proc/self/clear_refs resets VmHWM), runs the step and reports VmHWM minus the RSS just before
the step. glibc is told to serve every allocation of 128 KiB or more with its own mmap
(MALLOC_MMAP_THRESHOLD_), so a freed tensor leaves RSS at once and the peak is the peak of live
memory, not of a heap that never shrinks: the memory the machine had to provide (tensors plus
BLAS workspaces), not an estimate. A worker that dies (out of memory, a crash) ends only itself.
"""
from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys

MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}


class WorkerFailed(RuntimeError):
    """A measurement subprocess that exited without a result (its output's tail in the message)."""


def status_mib(key: str) -> float:
    """A /proc/self/status field (VmRSS, VmHWM, VmSize ...) in MiB."""
    with open("/proc/self/status") as f:
        text = f.read()
    return int(re.search(rf"^{key}:\s+(\d+) kB", text, re.M).group(1)) / 1024


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def available_gib() -> float | None:
    """MemAvailable in GiB (None off Linux)."""
    try:
        with open("/proc/meminfo") as f:
            return int(re.search(r"MemAvailable:\s+(\d+)", f.read()).group(1)) / 2 ** 20
    except (OSError, AttributeError):
        return None


def run_worker(module: str, argv: list[str], timeout: float, env: dict[str, str] | None = None) -> dict:
    """`python -m module argv...` in a fresh process; its last stdout line parsed as JSON.
    WorkerFailed when it exits non-zero, prints no JSON, or runs past `timeout` seconds."""
    full_env = dict(os.environ, **MALLOC_ENV, **(env or {}))
    try:
        proc = subprocess.run([sys.executable, "-m", module, *argv], env=full_env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise WorkerFailed(f"took more than {timeout:.0f}s") from None
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout)[-2000:]
        raise WorkerFailed(f"exit {proc.returncode}: {tail}")
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        raise WorkerFailed(f"no JSON result: {lines[-1][:500]}") from None

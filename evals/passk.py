"""pass@k (Chen et al., 2021) and bootstrap intervals over tasks.

pass@k is the chance that at least one of k episodes drawn without replacement from the n a
task got passes. With c passes among n, it is 1 - C(n-c, k) / C(n, k), the unbiased estimator of
the HumanEval paper. The binomials overflow floats for large n, so it is computed as the
product 1 - prod_{i=n-c+1}^{n} (1 - k/i), which only ever multiplies numbers in [0, 1].

The intervals resample tasks, not episodes: the question a user asks is "would another draw of
tasks like these give the same number", and each task's estimate already carries its own
episode noise into the spread between tasks (the clustered-error view of evals). What this does
not guarantee: with few tasks (under ~20) a percentile bootstrap is too narrow; read it as a
rough guide there, and prefer more tasks over more episodes per task.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _check_int(name: str, value: object) -> int:
    # bool is an int subclass; True as "n" is a caller bug, not a count.
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ValueError(f"pass_at_k: {name} must be an integer count, got {value!r}")
    return value


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from c passes among n episodes of one task.

    Raises ValueError when the counts are impossible: n < 1, c outside [0, n], k outside [1, n]
    (pass@k needs at least k episodes; sample more or ask for a smaller k)."""
    n, c, k = _check_int("n", n), _check_int("c", c), _check_int("k", k)
    if n < 1:
        raise ValueError(f"pass_at_k: n (episodes) must be >= 1, got n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k: c (passes) must be between 0 and n={n}, got c={c}")
    if k < 1:
        raise ValueError(f"pass_at_k: k must be >= 1, got k={k}")
    if k > n:
        raise ValueError(f"pass_at_k: k={k} is larger than n={n}; pass@{k} needs at least {k} "
                         f"episodes per task (raise n or lower k)")
    if n - c < k:
        return 1.0  # every k-subset holds a pass
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def pass_at_k_exact(n: int, c: int, k: int) -> float:
    """The same quantity by exact integer binomials (slow for large n; a reference)."""
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


# ----------------------------------------------------------------------------- intervals


@dataclass(frozen=True)
class Interval:
    """A point estimate with a percentile-bootstrap interval."""

    mean: float
    low: float
    high: float
    level: float = 0.95

    def to_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "level": self.level}

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"


def bootstrap_mean(values: Sequence[float], *, level: float = 0.95, samples: int = 10_000,
                   seed: int = 0) -> Interval:
    """Mean of per-task values with a percentile bootstrap interval over tasks (seeded).

    One task gives a zero-width interval: there is no spread between tasks to resample."""

    x = np.asarray(values, dtype=np.float64)  # [T]
    if x.ndim != 1 or len(x) == 0:
        raise ValueError("bootstrap_mean: need at least one per-task value")
    if not 0.0 < level < 1.0:
        raise ValueError(f"bootstrap_mean: level must be in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(samples, len(x)))  # [S, T]
    means = x[idx].mean(axis=1)  # [S]
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return Interval(float(x.mean()), float(lo), float(hi), level)


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, level: float = 0.95,
                     samples: int = 10_000, seed: int = 0) -> Interval:
    """Mean of b - a over the same tasks, with a bootstrap interval that resamples tasks and
    keeps each task's pair together (so the shared task difficulty cancels)."""

    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    if xa.shape != xb.shape:
        raise ValueError(f"paired_bootstrap: the two sides must cover the same tasks "
                         f"({len(xa)} vs {len(xb)} values)")
    return bootstrap_mean(xb - xa, level=level, samples=samples, seed=seed)


def verdict(diff: Interval, *, label_a: str = "A", label_b: str = "B") -> str:
    """Plain-words reading of a paired difference b - a."""
    pct = f"{diff.level:.0%}"
    if diff.low > 0:
        return (f"improvement: {label_b} beats {label_a} by {diff.mean:+.3f} "
                f"({pct} interval {diff.low:+.3f} to {diff.high:+.3f} excludes 0)")
    if diff.high < 0:
        return (f"regression: {label_b} is worse than {label_a} by {diff.mean:+.3f} "
                f"({pct} interval {diff.low:+.3f} to {diff.high:+.3f} excludes 0)")
    return (f"within noise: difference {diff.mean:+.3f}, {pct} interval "
            f"{diff.low:+.3f} to {diff.high:+.3f} includes 0")

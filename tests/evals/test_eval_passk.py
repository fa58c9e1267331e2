"""pass@k against brute-force enumeration, and the bootstrap intervals."""
from __future__ import annotations

import itertools
import math

import pytest

from fixrl.evals import pass_at_k
from fixrl.evals.passk import bootstrap_mean, paired_bootstrap, pass_at_k_exact, verdict


def brute_force(n: int, c: int, k: int) -> float:
    """Share of all k-subsets of n episodes (c of them passing) that hold at least one pass."""
    episodes = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(1 for s in subsets if any(episodes[i] for i in s)) / len(subsets)


@pytest.mark.parametrize("n", range(1, 10))
def test_matches_enumeration_over_all_subsets(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_force(n, c, k), abs=1e-12), (n, c, k)


def test_known_values():
    assert pass_at_k(10, 0, 1) == 0.0
    assert pass_at_k(10, 10, 10) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 3 of the 6 pairs hold the pass
    assert pass_at_k(5, 2, 4) == 1.0  # n - c < k


def test_stable_for_large_n():
    # C(5000, 2500) overflows a float; the product form does not.
    n, c = 5000, 37
    for k in (1, 10, 100, 1000):
        v = pass_at_k(n, c, k)
        assert 0.0 <= v <= 1.0 and math.isfinite(v)
        assert v == pytest.approx(pass_at_k_exact(n, c, k), rel=1e-9)
    assert pass_at_k(100_000, 1, 1) == pytest.approx(1e-5, rel=1e-9)
    # pass@k grows with k
    vals = [pass_at_k(2000, 5, k) for k in (1, 10, 100, 1000)]
    assert vals == sorted(vals)


@pytest.mark.parametrize("n,c,k,words", [
    (4, 1, 8, "k=8 is larger than n=4"),
    (4, 5, 1, "c (passes) must be between 0 and n=4"),
    (4, -1, 1, "c (passes)"),
    (0, 0, 1, "n (episodes) must be >= 1"),
    (4, 1, 0, "k must be >= 1"),
    (4.5, 1, 1, "integer"),
    ("4", 1, 1, "integer"),
])
def test_bad_counts_are_clear_errors(n, c, k, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        pass_at_k(n, c, k)


def test_bootstrap_interval_covers_and_is_seeded():
    vals = [0.0, 1.0] * 20
    a = bootstrap_mean(vals, seed=3)
    assert a == bootstrap_mean(vals, seed=3)
    assert a.mean == 0.5 and a.low < 0.5 < a.high
    # binomial standard error of 40 coin flips ~ 0.079 -> a 95% interval about +-0.155
    assert 0.25 < a.high - a.low < 0.38
    one = bootstrap_mean([0.7])
    assert one.low == one.high == 0.7
    with pytest.raises(ValueError):
        bootstrap_mean([])


def test_paired_bootstrap_cancels_shared_task_difficulty():
    # Tasks of very different difficulty, B uniformly 0.05 better: unpaired intervals overlap
    # widely, the paired one excludes 0.
    a = [0.0, 0.1, 0.9, 0.2, 0.8, 0.5, 0.3, 0.7, 0.6, 0.4] * 3
    b = [x + 0.05 for x in a]
    d = paired_bootstrap(a, b, seed=0)
    assert d.mean == pytest.approx(0.05)
    assert d.low > 0
    assert verdict(d).startswith("improvement")
    assert verdict(paired_bootstrap(b, a)).startswith("regression")
    noisy = paired_bootstrap([0, 1, 0, 1], [1, 0, 0, 1])
    assert verdict(noisy).startswith("within noise")
    with pytest.raises(ValueError, match="same tasks"):
        paired_bootstrap([0.1, 0.2], [0.1])

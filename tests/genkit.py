"""Helpers of the generator's tests: a tiny repository whose tests reach its functions in ways
test selection must handle, and a Runner that records the jobs it runs (a real LocalRunner or
cluster runner underneath)."""
from __future__ import annotations

from pathlib import Path

PRICES = '''\
"""Prices, with a memo of the totals computed so far."""

MEMO = {}


def total(prices, tax):
    value = sum(prices) * (1 + tax)
    MEMO[tuple(prices)] = value
    return value


def discount(price, pct):
    if pct > 100:
        raise ValueError("pct above 100")
    return price - price * pct / 100


def clamp(v, lo, hi):
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


def unused(x):
    return x * 2 + 1
'''

SHOP_TESTS = '''\
import subprocess
import sys

import pytest

from shop.prices import MEMO, clamp, discount, total


def test_total():
    assert total([10, 20], 0.5) == 45.0


def test_total_memo():
    # Reads what test_total computed, without calling total: selection cannot see it.
    assert MEMO[(10, 20)] == 45.0


def test_discount():
    assert discount(200, 10) == 180.0


def test_discount_limit():
    with pytest.raises(ValueError):
        discount(1, 101)


def test_clamp():
    assert clamp(5, 0, 10) == 5
    assert clamp(-1, 0, 10) == 0
    assert clamp(11, 0, 10) == 10


def test_discount_in_a_process():
    # Reaches discount in a child process, where the profiler cannot see it.
    code = "from shop.prices import discount; print(discount(50, 50))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "25.0"
'''

SPANS = {"total": (6, 9), "discount": (12, 15), "clamp": (18, 23), "unused": (26, 27)}
"""Function -> its lines in PRICES."""

COVERING = {
    "total": {"tests/test_shop.py::test_total", "tests/test_shop.py::test_discount_in_a_process"},
    "discount": {"tests/test_shop.py::test_discount", "tests/test_shop.py::test_discount_limit",
                 "tests/test_shop.py::test_discount_in_a_process"},
    "clamp": {"tests/test_shop.py::test_clamp", "tests/test_shop.py::test_discount_in_a_process"},
    "unused": {"tests/test_shop.py::test_discount_in_a_process"},
}
"""The selection each function's candidates must get: the tests that call it, plus the one that
starts a process (in every selection: what runs in the process is not seen, so even `unused`,
which no test calls, gets it); `test_total_memo` never calls `total`."""


def make_shop_repo(root: Path) -> Path:
    repo = root / "shop-repo"
    (repo / "shop").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "shop" / "__init__.py").write_text("")
    (repo / "shop" / "prices.py").write_text(PRICES)
    (repo / "tests" / "test_shop.py").write_text(SHOP_TESTS)
    (repo / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    return repo


def mutated_function(source: str) -> str:
    """Which function of PRICES a mutant's text changes (by the first line that differs)."""
    old, new = PRICES.splitlines(), source.splitlines()
    line = next(i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b)
    return next(name for name, (first, last) in SPANS.items() if first <= line <= last)


class RecordingRunner:
    """A Runner that runs every job on `inner` and keeps (job, result) of each."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.width = inner.width
        self.runs: list[tuple[object, object]] = []

    def submit(self, fn, workspace, *args, seconds):
        fut = self.inner.submit(fn, workspace, *args, seconds=seconds)
        job = args[0]

        def done(f) -> None:
            if not f.cancelled():
                self.runs.append((job, None if f.exception() else f.result()))

        fut.add_done_callback(done)
        return fut

    def close(self) -> None:
        self.inner.close()

"""Helpers for the train tests: a small suite built in a temp dir, fake rollouts of known pass
rates, and a reward of the episode info that varies within a group for a random tiny model."""
from __future__ import annotations

import random
import textwrap
import zlib
from pathlib import Path

from minisuite import write_mutant_suite

from fixrl.envs.types import EpisodeInfo

OPS = textwrap.dedent('''\
    """Small helpers."""


    def clamp(x, lo, hi):
        return max(lo, min(x, hi))


    def count_below(xs, limit):
        n = 0
        for x in xs:
            if x < limit:
                n += 1
        return n


    def scale(xs, factor):
        return [x * factor for x in xs]
    ''')

PUBLIC_TESTS = textwrap.dedent('''\
    from ops import clamp


    def test_clamp_inside():
        assert clamp(5, 0, 10) == 5
    ''')

HIDDEN_TESTS = textwrap.dedent('''\
    from ops import clamp, count_below, scale


    def test_clamp():
        assert clamp(-3, 0, 10) == 0
        assert clamp(30, 0, 10) == 10


    def test_count_below():
        assert count_below([1, 2, 3, 4], 3) == 2
        assert count_below([5, 5], 5) == 0


    def test_scale():
        assert scale([1, 2, 3], 2) == [2, 4, 6]
    ''')

# (task id, function, family, split)
PICKS = [("clamp-minmax", "clamp", "swap_minmax", "train"),
         ("count-flip", "count_below", "flip_comparison", "train"),
         ("scale-arith", "scale", "wrong_arith", "train"),
         ("count-init", "count_below", "wrong_init", "heldout")]


def build_suite(root: Path) -> Path:
    return write_mutant_suite(root, source=OPS, public_tests=PUBLIC_TESTS, hidden_tests=HIDDEN_TESTS, picks=PICKS,
                              suite={"name": "trainmini",
                                     "rename_pool": ["alpha", "bravo", "delta", "echo", "golf", "hotel", "india",
                                                     "kilo"],
                                     "defaults": {"repo": "repo", "file": "ops.py",
                                                  "public_tests": "python -m pytest -q tests/test_ops.py",
                                                  "limits": {"max_turns": 4, "max_edits": 1}}})


def coin_reward(info) -> float:
    """1 or 0 by the name the episode's function was renamed to: a deterministic function of
    the episode info that differs between the episodes of a group (each has its own renaming
    seed), so a random tiny model still gets mixed groups and a gradient."""
    shown = ",".join(sorted((info.renamed or {}).values()))
    return float(zlib.crc32(shown.encode()) % 2)


class FakeTraj:
    """Just what the sampler reads: group, reward, info."""

    def __init__(self, task_id: str, group: int, reward: float, outcome: str):
        self.task_id, self.group, self.reward = task_id, group, reward
        self.info = EpisodeInfo(task_id=task_id, outcome=outcome)


def bernoulli_rollout(rates: dict[str, float], G: int, seed: int = 0, error_rate: float = 0.0, calls=None):
    """A rollout function whose episodes pass with a known rate per task id."""
    rng = random.Random(seed)

    def rollout(tasks, call_index):
        if calls is not None:
            calls.append([t.id for t in tasks])
        out = []
        for g, t in enumerate(tasks):
            for _ in range(G):
                if rng.random() < error_rate:
                    out.append(FakeTraj(t.id, g, 0.0, "error"))
                    continue
                ok = rng.random() < rates[t.id]
                out.append(FakeTraj(t.id, g, float(ok), "pass" if ok else "fail"))
        return out

    return rollout

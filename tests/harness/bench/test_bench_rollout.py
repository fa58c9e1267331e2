"""`fixrl bench rollout` from the command line (in-process) on the tiny checkpoint."""
from __future__ import annotations

import json

import pytest

from fixrl.harness.cli import main


@pytest.mark.slow
def test_bench_rollout_json(tiny_model, capsys):
    rc = main(["bench", "rollout", "--json", "--model", str(tiny_model), "--episodes", "3", "--batch", "3",
               "--max-new-tokens", "4", "--turns", "2", "--repeats", "2"])
    assert rc == 0
    r = json.loads(capsys.readouterr().out)
    assert len(r["batched"]["all_seconds"]) == 2 and r["batched"]["seconds"] == min(r["batched"]["all_seconds"])
    assert r["one_at_a_time"]["episodes"] == r["batched"]["episodes"] == 3
    # the second turn of every episode ran only its new tokens: the first turn's came from its cache
    assert r["batched"]["prompt_tokens_from_cache"] > 3 * 300
    assert r["batched"]["lockstep"] == 3 and r["one_at_a_time"]["lockstep"] == 1
    assert r["speedup_episodes_per_min"] > 0 and r["batched"]["errors"] == 0

"""`fixrl bench logprobs`: `--layers all`'s plan for the naive baseline, and a measurement
subprocess run from its config."""
from __future__ import annotations

import pytest


def test_bench_logprobs_layers_all_plans_around_the_naive_step(monkeypatch):
    """At all 24 layers the naive step needs more than this machine has: it is left out with the
    reason, while the naive head stage (the logits-memory baseline) still runs."""
    from fixrl.harness.bench import logprobs as bl
    from fixrl.harness.bench.errors import BenchError

    cfg = bl.Config(layers="all")
    layers = bl.layer_count(cfg.layers)
    assert layers == bl.REAL_LAYERS
    for bad in ("25", "0", "many"):
        with pytest.raises(BenchError, match="--layers"):
            bl.layer_count(bad)
    head, step = bl.naive_need_gib(cfg.tokens, layers)
    monkeypatch.setattr(bl, "available_gib", lambda: (head + step) / 2)
    skip = bl._plan(cfg, layers)
    assert list(skip) == ["step_naive"] and f"{step:.1f} GiB" in skip["step_naive"]
    monkeypatch.setattr(bl, "available_gib", lambda: step + 1)
    assert bl._plan(cfg, layers) == {}
    monkeypatch.setattr(bl, "available_gib", lambda: head / 2)
    with pytest.raises(BenchError, match="smaller --tokens"):
        bl._plan(cfg, layers)


def test_bench_logprobs_worker_runs_from_the_config(capsys):
    """The measurement subprocess gets the config as JSON and reports the step it ran: the
    fixrl head on the largest chunk, at one layer and a short trajectory (seconds)."""
    from fixrl.harness.bench import logprobs as bl
    from fixrl.harness.cli import main

    cfg = bl.Config(layers="1", tokens=400, reply_tokens=60, turns=3, prompt_tokens=100, chunk_size=32)
    r = bl._measure("head_chunk", cfg)
    assert r["method"] == "head_chunk" and r["layers"] == 1 and r["reply_tokens"] == 60 and r["cpu_seconds"] > 0
    assert main(["bench", "logprobs", "--layers", "99"]) == 2
    assert "--layers 99" in capsys.readouterr().err

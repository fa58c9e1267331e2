"""`fixrl bench grpo-step` end to end on the CPU at the tiny shape: the memory model against the
measured update, a size that does not fit left out, bad input named."""
from __future__ import annotations

import json
import math

import pytest

from fixrl.train import memory_model as mm

TINY_ARGS = ["--prompt-tokens", "100", "--reply-tokens", "60"]


@pytest.mark.slow
def test_bench_grpo_step_end_to_end_at_the_tiny_shape(capsys, monkeypatch):
    from fixrl.harness.bench import grpo_step as bench_grpo
    from fixrl.harness.cli import main

    args = ["bench", "grpo-step", "--sizes", "tiny", "--model-sizes", "tiny", "--tokens", "512", "--model-tokens",
            "512,768", "--precisions", "bf16", "--json", *TINY_ARGS]
    assert main(args) == 0
    r = json.loads(capsys.readouterr().out)
    [run] = r["updates"]
    step = run["steps"]["512"]
    assert run["precision"] == "bf16" and step["fits"] and step["policy_tokens"] == 60 and step["skipped_steps"] == 0
    assert math.isfinite(step["loss"]) and step["grad_norm"] > 0 and step["cpu_seconds"] > 0
    assert 0.6 < step["model_over_measured"] < 1.5  # the memory model against the measured update
    assert run["weights_mib"] == pytest.approx(mm.parameter_count(mm.TINY) * 2 / 2 ** 20, rel=0.2)
    assert [(p["size"], p["tokens"]) for p in r["memory_model"]["predictions"]] == [("tiny", 512), ("tiny", 768)]
    assert all(p["fits_t4"] and p["gib"]["total"] > 0 for p in r["memory_model"]["predictions"])
    # a size that would not fit in the memory available is not run, and says so
    monkeypatch.setattr(bench_grpo, "available_gib", lambda: 0.01)
    assert main(args[:-len(TINY_ARGS) - 1] + TINY_ARGS + ["--json"]) == 0
    [run] = json.loads(capsys.readouterr().out)["updates"]
    assert "does not fit in this machine's memory" in run["skipped"] and "steps" not in run
    # bad input: a trajectory that cannot be laid out is named with the flags that fix it
    assert main(["bench", "grpo-step", "--tokens", "512"]) == 2
    assert "--tokens 512" in capsys.readouterr().err

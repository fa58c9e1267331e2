"""The benches of the T4 path: the Qwen2.5 shapes and the memory model's counting against real
models, `fixrl bench grpo-step` and `fixrl bench gpu` run end to end on the CPU at the tiny
shape (the GPU check's dry run: a size that runs out of memory under the cap is reported and the
next still runs; the deadline), and `bench logprobs --layers all`'s plan for the naive baseline."""
from __future__ import annotations

import json
import math

import pytest
import torch

from fixrl.train import memory_model as mm

TINY_ARGS = ["--prompt-tokens", "100", "--reply-tokens", "60"]


@pytest.mark.parametrize("size", ["0.5b", "1.5b", "3b", "tiny"])
def test_shapes_and_counts_match_the_models_they_describe(size):
    """parameter_count and lora_parameter_count against a transformers Qwen2 model of the shape
    (on the meta device: no memory) with peft's all-linear LoRA r16, and the model cards."""
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    s = mm.SHAPES[size]
    cfg = Qwen2Config(vocab_size=s.vocab, hidden_size=s.hidden, intermediate_size=s.intermediate,
                      num_hidden_layers=s.layers, num_attention_heads=s.heads, num_key_value_heads=s.kv_heads,
                      tie_word_embeddings=s.tied)
    with torch.device("meta"):
        model = get_peft_model(Qwen2ForCausalLM(cfg), LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
    assert sum(p.numel() for p in model.parameters() if not p.requires_grad) == mm.parameter_count(s)
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == mm.lora_parameter_count(s, 16)
    card = {"0.5b": 0.49e9, "1.5b": 1.54e9, "3b": 3.09e9}.get(size)
    if card:  # the released checkpoints' parameter counts (tied embeddings)
        assert abs(mm.parameter_count(s) - card) < 0.006e9
    w, a, c = mm.counted_terms(s, 5600, "fp16")
    assert (w, a, c) == (2 * mm.parameter_count(s), 16 * mm.lora_parameter_count(s, 16),
                         (s.layers + 1) * 5600 * s.hidden * 2)
    t = mm.predict(s, 5600, "fp16", head_chunk=3.0, layer=5.0)
    assert t.total == w + a + c + 5.0 and t.as_gib()["total"] == t.total / mm.GIB


@pytest.mark.slow
def test_bench_grpo_step_end_to_end_at_the_tiny_shape(capsys, monkeypatch):
    from fixrl.harness.cli import main
    from fixrl.train import bench_grpo

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


def test_bench_gpu_dry_run_on_the_cpu(tmp_path, capsys):
    """The GPU check's driver and workers on the CPU: under a 0.2 GB cap a 2-layer 0.5B cannot
    even be built (fits: no, out of memory) and the tiny size after it still runs and fits; the
    JSON file holds both, with the memory model's prediction beside the measurement."""
    from fixrl.harness.cli import main

    out = tmp_path / "gpu.json"
    assert main(["bench", "gpu", "--device", "cpu", "--sizes", "0.5b,tiny", "--layers", "2", "--tokens", "512,768",
                 "--cap-gb", "0.2", "--threads", "1", "--out", str(out), *TINY_ARGS]) == 0
    report = json.loads(out.read_text())
    assert "written to" in capsys.readouterr().out
    rows = {(r["size"], r["tokens"]): r for r in report["results"]}
    assert sorted(rows) == [("0.5b", 512), ("0.5b", 768), ("tiny", 512), ("tiny", 768)]
    for t in (512, 768):
        big, small = rows["0.5b", t], rows["tiny", t]
        assert big["fits"] is False and "out of memory" in big["error"]
        assert small["fits"] is True and math.isfinite(small["loss"]) and small["skipped_steps"] == 0
        assert small["loss_scale"] == 2.0 ** 16  # fp16: the GradScaler at work
        assert 0.6 < small["predicted_over_measured"] < 1.5 and small["step_seconds"] > 0
    assert report["cap_bytes"] == 200_000_000 and report["precision"] == "fp16" and report["machine"]["device"] == "cpu"


def test_bench_gpu_deadline_and_device_errors(tmp_path, capsys):
    from fixrl.harness.cli import main

    out = tmp_path / "gpu.json"
    assert main(["bench", "gpu", "--device", "cpu", "--sizes", "tiny", "--deadline", "1", "--out", str(out)]) == 0
    [row, _] = json.loads(out.read_text())["results"]
    assert row["fits"] is None and row["error"].startswith("not run")
    capsys.readouterr()
    if not torch.cuda.is_available():
        assert main(["bench", "gpu", "--out", str(out)]) == 2
        assert "no CUDA device" in capsys.readouterr().err
    assert main(["bench", "gpu", "--device", "tpu", "--out", str(out)]) == 2
    assert "--device 'tpu'" in capsys.readouterr().err


def test_bench_logprobs_layers_all_plans_around_the_naive_step(monkeypatch):
    """At all 24 layers the naive step needs more than this machine has: it is left out with the
    reason, while the naive head stage (the logits-memory baseline) still runs."""
    from fixrl.sandbox.bench import BenchError
    from fixrl.train import bench_logprobs as bl

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
    from fixrl.harness.cli import main
    from fixrl.train import bench_logprobs as bl

    cfg = bl.Config(layers="1", tokens=400, reply_tokens=60, turns=3, prompt_tokens=100, chunk_size=32)
    r = bl._measure("head_chunk", cfg)
    assert r["method"] == "head_chunk" and r["layers"] == 1 and r["reply_tokens"] == 60 and r["cpu_seconds"] > 0
    assert main(["bench", "logprobs", "--layers", "99"]) == 2
    assert "--layers 99" in capsys.readouterr().err

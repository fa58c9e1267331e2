"""`fixrl bench gpu` run end to end on the CPU at the tiny shape (the GPU check's dry run: a size
that runs out of memory under the cap is reported and the next still runs; the deadline)."""
from __future__ import annotations

import json
import math

import torch

TINY_ARGS = ["--prompt-tokens", "100", "--reply-tokens", "60"]


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

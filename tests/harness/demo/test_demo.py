"""`fixrl demo --quick` end to end: every stage runs for real (tiny checkpoint, local sandboxes,
SFT, probe, GRPO, evaluations, report) and leaves its outputs. The size of the gain is the
benchmark's business (README), not this test's."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
@pytest.mark.timeout(3600)  # two demo runs (each capped at 30 minutes): minutes alone, far more on a loaded machine
def test_demo_quick_runs_every_stage(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    run = subprocess.run([sys.executable, "-m", "fixrl.harness.cli", "demo", "--quick", "--path-copies", "1",
                          "--out", str(out)],
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    # 2. the tiny policy, the demonstrations it was fine-tuned on, the SFT checkpoint
    assert (out / "model" / "config.json").exists()
    demos = [json.loads(line) for line in (out / "demos.jsonl").read_text().splitlines()]
    assert {d["info"]["outcome"] for d in demos} <= {"pass", "fail"}
    assert len(demos) == 8 + 8 + 8 + 16  # --quick's demo_mix and after_read totals
    assert any(d["reward"] == 1.0 for d in demos) and any(d["reward"] == 0.0 for d in demos)
    # informed episodes whose choice to read is out of the loss (the read's arguments are not)
    choice_out = [d for d in demos if d["assistant_mask"][d["turn_spans"][0][0]] == 0]
    assert choice_out and len(choice_out) < len(demos)
    for d in choice_out:
        a, b = d["turn_spans"][0]
        assert d["reward"] == 1.0 and d["info"]["actions"][0].startswith("read")
        assert 0 < sum(d["assistant_mask"][a:b]) < b - a
    # the informed ones alone come first (their own file and SFT stage), then the whole mix
    informed = [json.loads(line) for line in (out / "demos_informed.jsonl").read_text().splitlines()]
    assert len(informed) == 8 + 16 and all(d["info"]["actions"][0].startswith("read") for d in informed)
    # default informed_tests=False: read, edit, submit, no pytest run between
    assert all(d["info"]["tests"] == 0 and d["info"]["actions"][-1] == "submit" for d in informed)
    # before them, excerpts of them: the read cut to a few lines, then the edit, the edit alone in the loss
    excerpts = [json.loads(line) for line in (out / "demos_excerpts.jsonl").read_text().splitlines()]
    assert len(excerpts) == len(informed)  # --quick: one excerpt each
    for d in excerpts:
        (a, b), = d["turn_spans"]
        assert sum(d["assistant_mask"]) == b - a == sum(d["assistant_mask"][a:b]) and b == len(d["token_ids"])
    # path excerpts: the first reply with another file, only the path in the loss; first and last stage
    paths = [json.loads(line) for line in (out / "demos_paths.jsonl").read_text().splitlines()]
    assert paths and all(0 < sum(d["assistant_mask"]) < 20 for d in paths)
    for stage in ("sft_excerpts", "sft_informed", "sft_model"):
        assert (out / stage / "config.json").exists(), stage
        trained_on = json.loads((out / stage / "sft_config.json").read_text())["config"]["data"]
        assert (str(out / "demos_paths.jsonl") in trained_on) == (stage != "sft_informed"), stage
    base = (out / "model" / "model.safetensors").read_bytes()
    assert (out / "sft_model" / "model.safetensors").read_bytes() != base, "SFT changed no weight"

    # 3. the probe's figures
    probe = json.loads((out / "probe.json").read_text())
    assert 0.0 <= probe["p_mixed_group"] <= 1.0 and "verdict" in probe

    # 4. GRPO: metrics per step, trajectories, an adapter in peft format, plots
    run_dir = out / "grpo"
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert all("rollout/reward" in r for r in rows)
    assert (run_dir / "adapter" / "adapter_config.json").exists()
    assert list(run_dir.glob("trajectories/*")), "no trajectories saved"
    assert list(run_dir.glob("report/*.png")) and (run_dir / "report" / "report.md").exists()

    # 5. held-out evaluations and the machine-readable results
    for name in ("blind", "start", "end"):
        assert (out / f"eval_{name}" / "results.json").exists()
    results = json.loads((out / "results.json").read_text())
    for key in ("start", "end", "blind", "gain_pass@1", "minutes"):
        assert key in results
    assert 0.0 <= results["end"]["pass@1"] <= 1.0
    assert "reads_before_first_edit" in results["end"]
    # teacher-forced read use of start and end on scripted informed held-out episodes
    read_use = json.loads((out / "read_use.json").read_text())
    assert read_use["start"]["decisions"] > 0 and set(read_use) == {"start", "end"}
    assert 0.0 <= results["read_use"]["start"] <= 1.0 and 0.0 <= results["read_use"]["end"] <= 1.0
    assert results["read_use"]["chance"] == 1 / 5
    assert 0.0 <= results["read_use"]["path_start"] <= 1.0 and read_use["end"]["paths"] > 0
    assert "held-out tasks" in run.stdout
    for name in ("start", "end"):
        assert list((out / f"eval_{name}" / "report").glob("*.png")), name

    # a rerun with more steps reuses every stage before GRPO, trains on, and scores the new end
    stamps = {f: (out / f).stat().st_mtime_ns for f in ("demos.jsonl", "probe.json", "eval_start/results.json")}
    again = subprocess.run([sys.executable, "-m", "fixrl.harness.cli", "demo", "--quick", "--path-copies", "1",
                            "--steps", "3", "--out", str(out)], capture_output=True, text=True, timeout=1800)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert stamps == {f: (out / f).stat().st_mtime_ns for f in stamps}
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert json.loads((out / "eval_end" / "results.json").read_text())["policy"]["grpo_step"] == 3
    assert json.loads((out / "read_use.json").read_text())["end"]["grpo_step"] == 3
    assert json.loads((out / "results.json").read_text())["grpo_steps"] == 3


def test_spread_covers_tasks_evenly() -> None:
    from fixrl.harness.demo.recipe import _spread

    tasks = [f"t{i}" for i in range(10)]
    batches = _spread(tasks, 25, seed=1)
    counts = {t: 0 for t in tasks}
    for chosen, n in batches:
        for t in chosen:
            counts[t] += n
    assert sum(counts.values()) == 25 and set(counts.values()) == {2, 3}
    assert batches == _spread(tasks, 25, seed=1)  # a fixed sample for a seed
    assert _spread(tasks, 4, seed=1)[0][1] == 1 and len(_spread(tasks, 4, seed=1)[0][0]) == 4
    assert _spread(tasks, 0, seed=1) == []


def test_demo_config_names_bad_counts() -> None:
    from fixrl.harness.demo.recipe import DemoConfig

    with pytest.raises(ValueError, match=r"demo_mix\['blind'\]"):
        DemoConfig(demo_mix={"blind": -1})
    with pytest.raises(ValueError, match="probe_tasks"):
        DemoConfig(probe_tasks=0)
    with pytest.raises(ValueError, match="path_copies"):
        DemoConfig(path_copies=-1)


def test_demo_cli_names_a_bad_path_copies(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "fixrl.harness.cli", "demo", "--path-copies", "-1", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "--path-copies -1" in run.stdout + run.stderr
    assert not list(tmp_path.iterdir())  # refused before any stage wrote anything

"""fixrl report: training-run curves and an eval's per-task chart, from files on disk."""
from __future__ import annotations

import json
import math

import pytest

from fixrl.evals.report import ReportError, load_metrics, report
from fixrl.evals.run import EvalResult, score
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.harness.cli import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_run(run, steps=12, with_entropy=True):
    run.mkdir(parents=True, exist_ok=True)
    lines = []
    for s in range(1, steps + 1):
        row = {"step": s, "rollout/reward": 0.2 + 0.04 * s,
               "zero_adv_frac/all_pass": 0.05 * s / steps, "zero_adv_frac/all_fail": 0.6 - 0.03 * s,
               "policy_tokens/pass": 120 + s, "policy_tokens/fail": 300 - 5 * s,
               "episodes": 24 + 6 * (s % 3), "groups/tried": 4 + s % 3, "groups/kept": 4,
               "loss": 0.1 / s, "approx_kl": 0.0, "clip_frac": 0.0, "grad_norm": 1.0 / s,
               "rollout/reads": 1.0 + s / 10, "rollout/edits": 1.5,
               "exit/submitted": 0.5 + s / 30, "exit/out_of_turns": 0.5 - s / 30}
        if with_entropy:
            row["entropy"] = 1.2 * math.exp(-s / 10)
        if s % 4 == 0:
            row["eval/pass@1"] = 0.1 + 0.03 * s
            row["eval/reads_before_first_edit"] = 0.2 * s
        lines.append(json.dumps(row))
    lines.append('{"step": 13, "rollout/rew')  # a killed run's half line
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return run


def save_eval(path, passes, n=4, name="blind"):
    """An eval result dir whose task i passed passes[i] of n episodes."""
    from dataclasses import dataclass

    @dataclass
    class T:
        id: str
        family: str | None = None
        kind: str = "fix"

    tasks = [T(f"task-{i:02d}") for i in range(len(passes))]
    trajs = [Trajectory(task_id=t.id, group=i, info={"outcome": "pass" if j < c else "fail"})
             for i, (t, c) in enumerate(zip(tasks, passes)) for j in range(n)]
    results, overall = score(trajs, tasks, [1, n], n=n)
    EvalResult(policy={"name": name}, suite="builtin", split="heldout", n=n, ks=[1, n], seed=0,
               tasks=results, overall=overall).save(path)
    return path


def test_training_report(tmp_path):
    run = write_run(tmp_path / "run")
    save_eval(run / "evals" / "step_000004", [0, 1, 2])
    save_eval(run / "evals" / "step_000008", [1, 2, 3])
    md = report(run)
    out = run / "report"
    assert md == out / "report.md"
    names = {p.name for p in out.glob("*.png")}
    assert names == {"reward.png", "heldout_pass.png", "zero_adv.png", "entropy.png",
                     "policy_tokens.png", "episodes.png", "loss.png", "optim.png", "behaviour.png",
                     "exit.png", "heldout_behaviour.png", "heldout_last_per_task.png"}
    for p in out.glob("*.png"):
        data = p.read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 5000
    text = md.read_text()
    assert "steps logged: 12" in text and "episodes sampled: 360" in text
    assert "1 unparseable line(s)" in text
    assert "| `eval/pass@1` | 0.22 | 0.46 |" in text
    assert "![Held-out pass@k](heldout_pass.png)" in text
    assert "Last held-out evaluation per task (`step_000008`)" in text
    m = load_metrics(run / "metrics.jsonl")
    assert m.cum_episodes[-1] == 360 and m.skipped_lines == 1


def test_training_report_tolerates_missing_metrics(tmp_path):
    run = write_run(tmp_path / "run", with_entropy=False)
    (run / "metrics.jsonl").write_text('{"step": 1, "rollout/reward": 0.5}\n'
                                       '{"step": 2, "rollout/reward": 0.6}\n')
    md = report(run, tmp_path / "rep")
    assert {p.name for p in (tmp_path / "rep").glob("*.png")} == {"reward.png"}
    assert "not in the metrics (no plot): Held-out pass@k" in md.read_text()


def test_sft_run_report(tmp_path):
    rows = [{"step": s, "epoch": 0, "loss": 2.0 / s, "grad_norm": 1.0, "tokens": 100, "lr": 1e-4}
            for s in range(1, 6)]
    (tmp_path / "sft_metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    md = report(tmp_path)
    assert {p.name for p in md.parent.glob("*.png")} == {"loss.png", "optim.png"}
    assert "metrics: `sft_metrics.jsonl`" in md.read_text()


def test_eval_report_per_task_chart(tmp_path):
    save_eval(tmp_path / "ev", [i % 5 if i % 5 < 5 else 4 for i in range(12)])
    assert main(["report", str(tmp_path / "ev")]) == 0
    png = tmp_path / "ev" / "report" / "pass_per_task.png"
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert "![pass per task](pass_per_task.png)" in (png.parent / "report.md").read_text()


def test_report_bad_paths(tmp_path, capsys):
    with pytest.raises(ReportError, match="no such file"):
        report(tmp_path / "nope")
    with pytest.raises(ReportError, match="neither a training run"):
        report(tmp_path)
    (tmp_path / "metrics.jsonl").write_text("")
    with pytest.raises(ReportError, match="no metrics lines yet"):
        report(tmp_path)
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "no such file or directory" in capsys.readouterr().err

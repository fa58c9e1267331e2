"""End to end: `evaluate` / `run_probe` / `fixrl eval` with real policies in real (local)
sandboxes, on a small generated suite (tests/evals/conftest.py) and the built-in suite."""
from __future__ import annotations

import gzip
import json
import math

import pytest

from fixrl.evals.probe import probe_result
from fixrl.evals.run import EvalError, EvalResult, evaluate, load_trajectories_gz
from fixrl.harness.cli import main


def blind_expected_rates(suite, tasks_, tmp):
    """Per task, the blind policy's pass rate from its construction (envs.scripted.BlindPlan): it
    draws one of the suite's families uniformly and applies that family's blind repair to the
    buggy function; the task passes when the repair restores the reference-fixed file. (A
    different edit that also passes could only raise the rate; question tasks get no answer.)"""
    from fixrl.tasks.format.materialize import materialize
    from fixrl.tasks.generate.mutate import repair

    rates = {}
    for t in tasks_:
        if t.kind != "fix" or not t.function or not t.file:
            rates[t.id] = 0.0
            continue
        buggy = (materialize(t, tmp / f"{t.id}-b", "buggy") / t.file).read_text()
        fixed = (materialize(t, tmp / f"{t.id}-f", "fixed") / t.file).read_text()
        ok = [g for g in suite.families if repair(buggy, t.function, g) == fixed]
        rates[t.id] = len(ok) / len(suite.families)
    return rates


def test_oracle_passes_everything_and_saves_results(mini_suite, tmp_path):
    out = tmp_path / "oracle"
    r = evaluate("oracle", mini_suite, n=2, ks=(1, 2), seed=3, out=out, progress=False)
    assert r.pass_at(1) == 1.0 and r.pass_at(2) == 1.0
    assert r.overall["errors"] == 0 and r.overall["episodes"] == 8
    assert all(t.passes == 2 and t.outcomes == ["pass", "pass"] for t in r.tasks)
    s = r.overall["stats"]
    assert s["read_before_edit"] == 1.0 and s["first_edit_right"] == 1.0
    assert s["exit_status"] == {"submitted": 1.0}
    back = EvalResult.load(out)
    assert back.pass_at(1) == 1.0 and [t.task_id for t in back.tasks] == [t.task_id for t in r.tasks]
    trajs = load_trajectories_gz(out / "trajectories.jsonl.gz")
    assert len(trajs) == 8 and all(t.info.outcome == "pass" for t in trajs)
    assert all(t.num_policy_tokens > 0 for t in trajs)
    assert "| pass@1 | 1.000 |" in (out / "results.md").read_text()
    # Per-episode seeds are recorded, distinct within a task, and the same in a rerun with the
    # same seed (even on a subset of the tasks): what makes two runs paired.
    seeds = r.tasks[2].episode_seeds
    assert len(set(seeds)) == 2
    again = evaluate("oracle", mini_suite, n=1, ks=(1,), seed=3, progress=False,
                     task_ids=[r.tasks[2].task_id])
    assert again.tasks[0].episode_seeds == seeds[:1]


def test_blind_policy_rate_probe_and_comparison(mini_suite, tmp_path, capsys):
    from fixrl import tasks

    suite = tasks.load_suite(mini_suite)
    rates = blind_expected_rates(suite, suite.split("heldout"), tmp_path)
    assert set(rates.values()) == {0.25}  # each task: exactly one of the 4 families repairs it
    n = 12
    r = evaluate("blind", mini_suite, n=n, ks=(1, 4), seed=0, out=tmp_path / "blind",
                 progress=False)
    expected = sum(rates.values()) / len(rates)
    se = math.sqrt(sum(p * (1 - p) / n for p in rates.values())) / len(rates)
    assert r.overall["errors"] == 0
    assert abs(r.pass_at(1) - expected) <= 3 * se, (r.pass_at(1), expected, se)
    s = r.overall["stats"]
    assert s["reads"] == 0.0 and s["read_before_edit"] == 0.0  # blind: never reads
    assert r.pass_at(4) > r.pass_at(1)  # same episodes, unbiased pass@4
    # The probe's view of the same episodes: some tasks mixed, a positive mixed-group chance.
    pr = probe_result(r, group_size=6, tries=16, needed=4)
    assert pr.stats.passes == [t.passes for t in r.tasks] and pr.stats.k == n
    assert pr.stats.mixed_tasks >= 1 and pr.stats.p_mixed_group > 0
    # The CLI: the oracle on the same tasks, then a paired comparison that calls it an improvement.
    code = main(["eval", "--policy", "oracle", "--suite", str(mini_suite), "-n", "1", "-k", "1",
                 "--out", str(tmp_path / "oracle"), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["pass@1"]["mean"] == 1.0 and d["tasks"] == 4
    with gzip.open(tmp_path / "oracle" / "trajectories.jsonl.gz", "rt") as f:
        assert len(f.readlines()) == 4
    code = main(["eval", "--compare", str(tmp_path / "blind"), str(tmp_path / "oracle"), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["diffs"]["pass@1"]["verdict"].startswith("improvement")
    assert d["diffs"]["pass@1"]["diff"]["mean"] == pytest.approx(1.0 - r.pass_at(1))


def test_probe_oracle_has_no_signal(mini_suite, capsys):
    code = main(["probe", "--policy", "oracle", "--suite", str(mini_suite), "--split", "heldout",
                 "-k", "1", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["has_signal"] is False and d["p_mixed_group"] == 0.0
    assert d["per_task"]["count-flip"] == {"passes": 1, "attempts": 1}
    assert d["verdict"].startswith("no signal: every task passed all of its attempts")


def test_empty_split_is_a_clear_error(mini_suite, capsys):
    with pytest.raises(EvalError, match="has no tasks in split 'train' \\(tasks per split: "
                                        "heldout: 4\\)"):
        evaluate("oracle", mini_suite, split="train", n=1, ks=(1,), progress=False)
    code = main(["probe", "--policy", "oracle", "--suite", str(mini_suite)])  # default: train
    assert code == 2 and "--split train" in capsys.readouterr().err


@pytest.mark.slow
def test_tiny_model_runs_and_gives_well_formed_results(tiny_model, mini_suite, tmp_path, capsys):
    out = tmp_path / "tiny"
    code = main(["eval", "--model", str(tiny_model), "--suite", str(mini_suite), "-n", "2",
                 "-k", "1,2", "--max-new-tokens", "12", "--max-turns", "2", "--task",
                 "clamp-minmax", "--task", "count-flip", "--out", str(out), "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0
    assert summary["policy"]["kind"] == "model" and summary["policy"]["temperature"] == 1.0
    assert summary["episodes"] == 4 and 0.0 <= summary["pass@1"]["mean"] <= 1.0
    d = json.loads((out / "results.json").read_text())
    assert d["n"] == 2 and [t["task_id"] for t in d["tasks"]] == ["clamp-minmax", "count-flip"]
    for t in d["tasks"]:
        assert t["episodes"] == 2 and len(t["outcomes"]) == 2 and len(t["episode_seeds"]) == 2
        assert set(t["outcomes"]) <= {"pass", "fail", "error"}
        for k in ("pass@1", "pass@2"):
            assert t[k] is None or 0.0 <= t[k] <= 1.0
    assert d["overall"]["stats"]["policy_tokens"] > 0
    trajs = load_trajectories_gz(out / "trajectories.jsonl.gz")
    assert len(trajs) == 4
    assert all(len(t.token_ids) == len(t.assistant_mask) and t.sampler_logprobs for t in trajs)
    assert main(["report", str(out)]) == 0
    assert (out / "report" / "pass_per_task.png").is_file()


@pytest.mark.docker
def test_oracle_in_docker_sandboxes(docker_available, mini_suite, capsys):
    code = main(["eval", "--policy", "oracle", "--suite", str(mini_suite), "--backend", "docker",
                 "-n", "1", "-k", "1", "--task", "clamp-minmax", "--task", "scale-arith",
                 "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["pass@1"]["mean"] == 1.0 and d["errors"] == 0


def _builtin(builtin_suite):
    from fixrl import tasks

    try:
        suite = tasks.load_suite(builtin_suite)
    except tasks.TaskError as e:
        if "no task files" in str(e).lower() or not any(builtin_suite.rglob("*.yaml")):
            pytest.skip(f"the built-in suite has no tasks yet ({builtin_suite})")
        raise
    return suite


def test_builtin_suite_oracle_and_blind(builtin_suite, tmp_path):
    suite = _builtin(builtin_suite)
    heldout = suite.split("heldout")
    assert heldout, "the built-in suite must have a heldout split"
    # One heldout task per bug family plus every question task: the oracle passes them all.
    # (tests/envs runs the oracle on every task; this is the eval path over the same suite.)
    sample = {}
    for t in heldout:
        sample.setdefault(t.family if t.kind == "fix" else f"question:{t.id}", t)
    oracle = evaluate("oracle", suite, split="heldout", n=1, ks=(1,), progress=False,
                      task_ids=[t.id for t in sample.values()])
    assert len(oracle.tasks) >= 8 and oracle.overall["errors"] == 0
    assert oracle.pass_at(1) == 1.0, [t.task_id for t in oracle.tasks if t.passes == 0]
    # The blind policy on fix tasks whose family it knows: within sampling noise of its rate from
    # construction (above it would mean the suite can be won by blind edits).
    picked = [t for t in heldout if t.kind == "fix" and t.family and t.function and t.file][:8]
    rates = blind_expected_rates(suite, picked, tmp_path)
    n = 4
    blind = evaluate("blind", suite, split="heldout", n=n, ks=(1,), progress=False,
                     task_ids=[t.id for t in picked])
    expected = sum(rates.values()) / len(rates)
    se = math.sqrt(sum(max(p * (1 - p), 0.05) / n for p in rates.values())) / len(rates)
    assert blind.overall["errors"] == 0
    assert abs(blind.pass_at(1) - expected) <= 3 * se, (blind.pass_at(1), expected, rates)
    assert blind.overall["stats"]["reads"] == 0.0

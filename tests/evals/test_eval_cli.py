"""`fixrl eval` / `fixrl probe` argument errors and `fixrl eval --compare`, through the real CLI."""
from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from fixrl.evals.run import EvalError, EvalResult, compare, score
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.harness.cli import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("argv,words", [
    (["eval", "--policy", "oracle", "-n", "4", "-k", "1,8"], "-k 8: every k must be between 1 "
                                                               "and -n (4)"),
    (["eval", "--policy", "oracle", "-n", "0"], "-n must be >= 1"),
    (["eval", "--suite", "x"], "give exactly one of --model DIR"),
    (["eval", "--policy", "oracle", "--adapter", "a"], "--adapter goes with --model"),
    (["eval", "--policy", "oracle", "--suite", "/no/such/suite"], "--suite /no/such/suite: no such "
                                                                  "directory"),
    (["probe", "--policy", "oracle", "-k", "0"], "-k must be >= 1"),
    (["probe", "--policy", "oracle", "--group-size", "1"], "--group-size must be >= 2"),
    (["eval", "--compare", "/no/a", "/no/b"], "/no/a: no eval results here"),
])
def test_bad_arguments_are_user_errors(capsys, argv, words):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert words in err
    assert "Traceback" not in err


def test_missing_model_and_adapter_and_tokenizer(capsys, tmp_path):
    model = tmp_path / "model"
    code, _, err = run_cli(capsys, "eval", "--model", str(model))
    assert code == 2 and f"--model {model}: no such directory" in err
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "qwen2"}')
    code, _, err = run_cli(capsys, "eval", "--model", str(model))
    assert code == 2 and "no tokenizer files there" in err and "save_pretrained" in err
    (model / "tokenizer_config.json").write_text("{}")
    code, _, err = run_cli(capsys, "probe", "--model", str(model), "--adapter",
                           str(tmp_path / "sft"))
    assert code == 2 and f"--adapter {tmp_path / 'sft'}: no such directory" in err
    (tmp_path / "sft").mkdir()
    code, _, err = run_cli(capsys, "eval", "--model", str(model), "--adapter",
                           str(tmp_path / "sft"))
    assert code == 2 and "no adapter_config.json" in err


@dataclass
class T:
    id: str
    family: str | None = None
    kind: str = "fix"


def saved_run(path, rates_by_task, n=8, seed=0, name="p"):
    """An eval result whose task i passes `round(rate * n)` of n episodes, saved to `path`."""
    tasks = [T(tid) for tid in rates_by_task]
    trajs = [Trajectory(task_id=tid, group=i,
                        info={"outcome": "pass" if j < round(rate * n) else "fail"})
             for i, (tid, rate) in enumerate(rates_by_task.items()) for j in range(n)]
    results, overall = score(trajs, tasks, [1, 4], n=n, seed=seed)
    r = EvalResult(policy={"name": name}, suite="s", split="heldout", n=n, ks=[1, 4], seed=seed,
                   tasks=results, overall=overall)
    r.save(path)
    return path


RATES = {f"t{i}": r for i, r in enumerate([0.0, 0.125, 0.25, 0.5, 0.75, 0.375, 0.0, 0.125,
                                           0.625, 0.25, 0.5, 0.0])}


def test_compare_improvement_regression_and_noise(tmp_path, capsys):
    a = saved_run(tmp_path / "a", RATES)
    better = {t: r + (0.25 if i % 2 else 0.125) for i, (t, r) in enumerate(RATES.items())}
    b = saved_run(tmp_path / "b", better)
    code, out, _ = run_cli(capsys, "eval", "--compare", str(a), str(b))
    assert code == 0
    assert "pass@1: A 0.292  B 0.479  B-A +0.188 [+0.156, +0.219]" in out
    assert "-> improvement" in out
    assert "paired by task and episode seed" in out
    code, out, _ = run_cli(capsys, "eval", "--compare", str(b), str(a), "--json")
    d = json.loads(out)
    assert d["diffs"]["pass@1"]["verdict"].startswith("regression")
    assert d["diffs"]["pass@4"]["diff"]["high"] < 0
    # One task better, one worse, the rest equal: within noise.
    c = saved_run(tmp_path / "c", {**RATES, "t0": 0.25, "t3": 0.25}, seed=1)
    cmp = compare(EvalResult.load(a), EvalResult.load(c))
    assert cmp.diffs["pass@1"]["verdict"].startswith("within noise")
    assert not cmp.seed_paired and "episode seeds differ" in cmp.notes[0]


def test_compare_mismatched_tasks_is_a_clear_error(tmp_path, capsys):
    a = saved_run(tmp_path / "a", RATES)
    b = saved_run(tmp_path / "b", {**{t: r for t, r in RATES.items() if t != "t3"}, "extra": 0.5})
    with pytest.raises(EvalError, match="Only in A .*: t3.*Only in B .*: extra"):
        compare(EvalResult.load(a), EvalResult.load(b))
    code, _, err = run_cli(capsys, "eval", "--compare", str(a), str(b))
    assert code == 2 and "cover different tasks" in err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.json").write_text('{"n": 3}')
    code, _, err = run_cli(capsys, "eval", "--compare", str(a), str(tmp_path / "bad"))
    assert code == 2 and "not a fixrl eval results file" in err

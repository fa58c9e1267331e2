"""A new user's mistakes, each ending in one message that names the thing and says what to do
(issue 34): a typo'd flag, `image:` on the local backend, a suite without held-out tasks, an
eval into an existing result, Ctrl-C in an eval. Real commands on the tiny suite."""
from __future__ import annotations

import gzip
import io
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from fixrl.harness.agent.progress import Steps
from fixrl.harness.cli import main
from fixrl.tasks.generate.mutate import OPERATORS
from fixrl.tasks.generate.report import GenerateReport, OpStats, print_report
from fixrl.train.config import GRPOConfig
from fixrl.train.grpo import load_run_suite
from fixrl.train.resolve import make_config, resolve


@pytest.fixture
def own_suite(tiny_suite_dir, tmp_path) -> Path:
    """A copy of the tiny suite the test may change."""
    return Path(shutil.copytree(tiny_suite_dir, tmp_path / "mine"))


def _set_field(suite: Path, task_id: str, **fields) -> Path:
    path = suite / "tasks" / f"{task_id}.yaml"
    data = yaml.safe_load(path.read_text())
    data.update(fields)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("argv,meant", [
    (["eval", "--splt", "train"], "--split"),
    (["tasks", "validate", "SUITE", "--jbs", "2"], "--jobs"),
    (["rollout", "--polcy", "oracle"], "--policy"),
    (["grpo", "--stpes", "3"], "--steps"),
])
def test_a_typod_flag_gets_the_commands_own_suggestion(argv, meant, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    command = " ".join(a for a in argv[:2] if not a.startswith("-") and a != "SUITE")
    assert f"fixrl {command}: error: unrecognized arguments: {argv[-2]}" in err
    assert f"did you mean {meant}" in err


def test_an_image_the_local_backend_cannot_honour_is_an_error(own_suite, capsys):
    """On main the image was ignored: the oracle scored 0.000 with no errored episode."""
    task_file = _set_field(own_suite, "clamp-high", image="python:3.12-slim")
    rc = main(["eval", "--policy", "oracle", "--suite", str(own_suite), "-n", "1", "-k", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert str(task_file) in err and "image: python:3.12-slim" in err and "--backend docker" in err
    assert main(["tasks", "validate", str(own_suite), "--task", "clamp-high", "--json", "--no-cache"]) == 1
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert not result["ok"] and "--backend docker" in result["reasons"][0]


def test_a_suite_without_heldout_tasks_says_which_split_flag_to_give(own_suite, capsys, caplog):
    _set_field(own_suite, "clamp-high", split="train")   # as `fixrl tasks new` writes every task
    assert main(["eval", "--policy", "oracle", "--suite", str(own_suite), "-n", "1", "-k", "1"]) == 2
    err = capsys.readouterr().err
    assert "--split heldout" in err and "give --split train" in err
    with caplog.at_level(logging.WARNING, logger="fixrl.train.grpo"):
        _, _, do_eval = load_run_suite(GRPOConfig(suite=str(own_suite), out="x"))
    assert not do_eval
    assert "held-out evaluation is OFF" in caplog.text and "--eval-split" in caplog.text


def test_eval_never_replaces_a_result_silently(tiny_suite_dir, tmp_path, capsys):
    out = tmp_path / "ev"
    argv = ["eval", "--policy", "oracle", "--suite", str(tiny_suite_dir), "-n", "1", "-k", "1", "--no-progress",
            "--out", str(out)]
    assert main(argv) == 0
    (out / "report").mkdir()   # as `fixrl report` leaves it
    before = (out / "results.json").read_text()
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--out {out}: already holds eval results" in err and "--overwrite" in err
    assert (out / "results.json").read_text() == before
    assert main([*argv, "--seed", "3", "--overwrite"]) == 0
    assert json.loads((out / "results.json").read_text())["seed"] == 3 and not (out / "report").exists()


def test_ctrl_c_in_an_eval_keeps_the_finished_episodes(tiny_suite_dir, tmp_path):
    out = tmp_path / "ev"
    argv = ["eval", "--policy", "oracle", "--suite", str(tiny_suite_dir), "-n", "60", "-k", "1", "--out", str(out)]
    code = f"import sys; from fixrl.harness.cli import main; sys.exit(main({argv!r}))"
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "80"})
    lines = []
    for line in proc.stderr:   # plain progress lines: stderr is a pipe
        lines.append(line)
        if line.startswith("eval: 1/60 episodes"):
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, "".join(lines) + rest
    assert "eval interrupted:" in rest and f"written to {out}/" in rest
    result = json.loads((out / "results.json").read_text())
    finished = result["overall"]["interrupted"]["finished"]
    assert 1 <= finished < 60 and result["overall"]["interrupted"]["planned"] == 60
    with gzip.open(out / "trajectories.jsonl.gz", "rt") as f:
        assert sum(1 for _ in f) == finished
    assert main(["report", str(out)]) == 0


def test_resume_accepts_the_flags_the_run_was_started_with(tiny_suite_dir, tmp_path, capsys):
    """An interrupted `fixrl grpo ...` rerun as `fixrl grpo ... --resume`: the same values are
    accepted (a path spelled another way too); a value that differs is refused, both named."""
    out = tmp_path / "run"
    started = ["grpo", "--model", str(tmp_path / "m"), "--suite", str(tiny_suite_dir), "--out", str(out),
               "--preset", "octlm", "--lr", "2e-05", "-G", "4", "--steps", "6"]
    (out / "checkpoint").mkdir(parents=True)
    resolve(make_config("octlm", model=str(tmp_path / "m"), suite=str(tiny_suite_dir), out=str(out),
                        learning_rate=2e-5, num_generations=4, max_steps=6)).save(out / "checkpoint" / "config.json")
    again = [a.replace(str(tiny_suite_dir), f"{tiny_suite_dir}/../{tiny_suite_dir.name}") for a in started]
    assert main([*again, "--steps", "8", "--resume", "--print-config"]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["max_steps"] == 8
    assert main([*started, "-G", "8", "--resume", "--print-config"]) == 2
    err = capsys.readouterr().err
    assert "drop --num-generations 8 (the run has 4)" in err and "--learning-rate" not in err


def test_a_failed_setup_is_said_once_from_its_first_line(own_suite, capsys):
    noisy = ("import sys; print('ModuleNotFoundError: no module named frobnicate'); "
             "[print('x' * 90) for _ in range(40)]; sys.exit(3)")
    _set_field(own_suite, "clamp-high", setup=[f'python -c "{noisy}"'])
    assert main(["tasks", "validate", str(own_suite), "--task", "clamp-high", "--json", "--no-cache"]) == 1
    (result,) = json.loads(capsys.readouterr().out)["results"]
    said = "\n".join(result["reasons"])
    assert said.count("failed with exit status 3") == 1, said
    assert "ModuleNotFoundError: no module named frobnicate" in said and "more lines" in said


def test_a_typod_check_command_is_a_command_problem(own_suite, capsys):
    task_file = _set_field(own_suite, "add-one-off", check={
        "files": {"tests/test_hidden_add_one_off.py": "checks/test_add_one_off.py"},
        "command": "python -m pytset -q tests/test_hidden_add_one_off.py",
        "tests": ["tests/test_hidden_add_one_off.py::test_add_one"]})
    assert main(["eval", "--policy", "oracle", "--suite", str(own_suite), "-n", "1", "-k", "1"]) == 2
    err = capsys.readouterr().err
    assert str(task_file) in err and "'pytset' is not pytest" in err


def test_a_missing_image_is_said_once_with_the_sandbox_status(tiny_suite_dir, docker_available, capsys):
    argv = ["--backend", "docker", "--image", "fixrl-no-such-image:1"]
    assert main(["tasks", "validate", str(tiny_suite_dir), "--task", "clamp-high", "--no-cache", *argv]) == 3
    err = capsys.readouterr().err
    assert err.count("Docker image 'fixrl-no-such-image:1' not found") == 1, err
    assert "fixrl sandbox build-image --tag fixrl-no-such-image:1" in err
    assert main(["eval", "--policy", "oracle", "--suite", str(tiny_suite_dir), "-n", "1", "-k", "1",
                 "--no-progress", *argv]) == 3
    assert capsys.readouterr().err.count("not found") == 1


def test_long_steps_show_progress_in_a_log(tiny_suite_dir, capsys):
    """Written to a file (not a terminal), validate and rollout print plain progress lines: at
    the start, at the first thing done, and where they ended."""
    assert main(["tasks", "validate", str(tiny_suite_dir), "--task", "clamp-high", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "validate: 0/1 tasks, valid 0" in out and "validate: 1/1 tasks, valid 1" in out
    assert main(["rollout", "--policy", "oracle", "--suite", str(tiny_suite_dir), "--task", "clamp-high",
                 "-n", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "rollout: 1/2 episodes, passed 1" in out and "rollout: 2/2 episodes, passed 2" in out


def test_a_step_that_waits_still_says_it_is_alive():
    stream = io.StringIO()
    with Steps("build", unit="layers", stream=stream, every=0.05):
        for _ in range(200):   # the heartbeat thread writes while this thread waits
            if stream.getvalue().count("build: 0 layers") >= 3:
                break
            time.sleep(0.05)
    assert stream.getvalue().count("build: 0 layers") >= 3, stream.getvalue()


def test_the_generators_yield_table_fits_80_columns():
    report = GenerateReport("repo", "out", "python -m pytest -q", 0,
                            per_op={op: OpStats(candidates=1234, tested=321, kept=7) for op in OPERATORS})
    buf = io.StringIO()
    print_report(report, Console(file=buf, width=80, force_terminal=True, color_system=None))
    text = buf.getvalue()
    assert "…" not in text and max(map(len, text.splitlines())) <= 80
    for head in ("cands", "tested", "equiv", "nonlocal", "no issue", "selected", "invalid", "change_constant"):
        assert head in text


def test_the_blind_baseline_says_why_it_scores_0_on_a_suite_without_functions(own_suite, capsys):
    for task_id in ("add-one-off", "total-init", "clamp-high"):   # as `fixrl tasks new` writes them
        path = own_suite / "tasks" / f"{task_id}.yaml"
        data = yaml.safe_load(path.read_text())
        del data["function"]
        data["tags"] = []
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["eval", "--policy", "blind", "--suite", str(own_suite), "-n", "1", "-k", "1", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "1 of 1 fix tasks name no `function:`" in err and "submits them unchanged and scores 0" in err
    assert "no `family_edits`" in err

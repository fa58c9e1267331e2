"""fixrl rollout from the command line (in-process)."""
from __future__ import annotations

import pytest

from fixrl.harness.agent.transcript import load_jsonl
from fixrl.harness.cli import main


def test_rollout_oracle_prints_and_saves(tiny_suite_dir, tmp_path, capsys):
    out = tmp_path / "trajs.jsonl"
    rc = main(["rollout", "--policy", "oracle", "--suite", str(tiny_suite_dir), "--task", "add-one-off",
               "-n", "2", "--save", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "add-one-off" in text and "pass" in text and '"name": "read"' in text
    trajs = load_jsonl(out)
    assert len(trajs) == 2 and all(t.info.outcome == "pass" for t in trajs)
    assert trajs[0].token_ids and trajs[0].tools and trajs[0].messages[0]["role"] == "system"


def test_rollout_model_quiet_gz(tiny_suite_dir, tiny_model, tmp_path, capsys):
    out = tmp_path / "t.jsonl.gz"
    rc = main(["rollout", "--model", str(tiny_model), "--suite", str(tiny_suite_dir), "--split", "heldout",
               "--max-new-tokens", "4", "--max-turns", "1", "--quiet", "--save", str(out)])
    assert rc == 0
    (traj,) = load_jsonl(out)
    assert traj.task_id == "clamp-high" and len(traj.sampler_logprobs) == len(traj.token_ids)
    assert "1 episode in" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["--policy", "telepathy"], "'telepathy' is not one of oracle, blind, random"),
    (["--model", "/nonexistent/model"], "--model /nonexistent/model: no such directory"),
    (["--policy", "oracle", "--task", "no-such-task"], "no-such-task"),
    (["--policy", "oracle", "-n", "0"], "-n 0"),
    (["--policy", "oracle", "--adapter", "/x"], "--adapter goes with --model"),
])
def test_rollout_bad_input(tiny_suite_dir, capsys, argv, message):
    assert main(["rollout", "--suite", str(tiny_suite_dir), *argv]) == 2
    assert message in capsys.readouterr().err


def test_rollout_bad_suite(tmp_path, capsys):
    assert main(["rollout", "--policy", "oracle", "--suite", str(tmp_path / "nope")]) == 2
    assert "no such directory" in capsys.readouterr().err


@pytest.mark.parametrize("command", [
    ["grpo", "--suite", "SUITE", "--out", "OUT", "--quiet"],
    ["sft", "--data", "SUITE/suite.yaml", "--out", "OUT", "--quiet"],
    ["eval", "--suite", "SUITE"],
    ["probe", "--suite", "SUITE"],
    ["rollout", "--suite", "SUITE", "--quiet"],
])
def test_a_missing_model_fails_before_torch_loads(command, tiny_suite_dir, tmp_path):
    """The model directory is checked before torch and transformers are imported (seconds, not
    the half minute their import takes on a loaded machine)."""
    import subprocess
    import sys

    argv = [a.replace("SUITE", str(tiny_suite_dir)).replace("OUT", str(tmp_path / "out")) for a in command]
    argv += ["--model", str(tmp_path / "no-model")]
    code = (f"import sys; from fixrl.harness.cli import main; rc = main({argv!r}); "
            "print(rc, 'torch' in sys.modules, 'transformers' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == ["2", "False", "False"], run.stdout + run.stderr
    assert f"--model {tmp_path / 'no-model'}: no such directory" in run.stderr


def test_tables_fit_a_log_file_and_library_warnings_stay_off_screen(tmp_path):
    """Written to a pipe, a summary table keeps its column names whole; deprecation warnings of
    the libraries fixrl uses are not shown (they are about fixrl's code, not the user's input)."""
    import subprocess
    import sys

    code = ("import warnings; from fixrl.harness.cli import quiet_third_parties; "
            "from fixrl.harness.agent.transcript import make_console; from rich.table import Table; "
            "quiet_third_parties(); warnings.warn('old api', FutureWarning); "
            "t = Table(); [t.add_column(c) for c in ['pass@1', 'read_before_edit', 'reads_before_first_edit', "
            "'first_edit_right', 'policy_tokens', 'exit_status_submitted', 'turns', 'tests']]; "
            "t.add_row(*['0.50'] * 8); make_console().print(t)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    for name in ("read_before_edit", "reads_before_first_edit", "exit_status_submitted"):
        assert name in run.stdout
    assert "…" not in run.stdout and "FutureWarning" not in run.stderr

"""The `fixrl tasks` command group: arguments reach the functions as documented."""
from __future__ import annotations

import pytest

from fixrl.harness.cli import build_parser


def test_generate_arguments_reach_the_generator():
    args = build_parser().parse_args(["tasks", "generate", "--repo", "r", "--test-cmd", "python -m pytest -q",
                                      "--out", "o", "--max", "5", "--seed", "3", "--backend", "docker",
                                      "--heldout-frac", "0.5"])
    assert (args.repo, args.test_cmd, args.out, args.max, args.seed, args.backend, args.heldout_frac) == \
        ("r", "python -m pytest -q", "o", 5, 3, "docker", 0.5)
    assert args.func.__name__ == "generate" and args.workers is None and args.json is False
    defaults = build_parser().parse_args(["tasks", "generate", "--repo", "r", "--test-cmd", "pytest", "--out", "o"])
    assert (defaults.max, defaults.seed, defaults.backend) == (None, 0, "local")


def test_generate_targeting_flags_reach_the_generator(monkeypatch, tmp_path):
    from fixrl.harness.cli import main
    from fixrl.harness.cli.commands import tasks as tasks_cmd
    from fixrl.tasks.generate.report import GenerateReport

    seen = {}

    def fake(repo, test_cmd, out, **kw):
        seen.update(kw, repo=repo, test_cmd=test_cmd, out=out)
        return GenerateReport(str(repo), str(out), test_cmd, 0, valid=1)

    monkeypatch.setattr(tasks_cmd, "generate_tasks", fake)
    code = main(["tasks", "generate", "--repo", "r", "--test-cmd", "pytest", "--out", str(tmp_path / "o"), "--json",
                 "--files", "pkg/*.py", "pkg/sub/", "--functions", "parse*", "Model.fit", "--operators",
                 "flip_comparison", "off_by_one", "--exclude-private", "--max-per-function", "3", "--no-select",
                 "--progress-every", "5", "--repeats", "3"])
    assert code == 0
    assert seen["repeats"] == 3
    assert seen["files"] == ["pkg/*.py", "pkg/sub/"] and seen["functions"] == ["parse*", "Model.fit"]
    assert seen["ops"] == ["flip_comparison", "off_by_one"] and seen["exclude_private"] is True
    assert (seen["max_per_function"], seen["select"], seen["progress_every"]) == (3, False, 5.0)
    assert "runner" not in seen
    main(["tasks", "generate", "--repo", "r", "--test-cmd", "pytest", "--out", str(tmp_path / "o"), "--json"])
    assert (seen["files"], seen["functions"], seen["ops"], seen["exclude_private"]) == (None, None, None, False)
    assert (seen["max_per_function"], seen["select"], seen["repeats"]) == (2, True, 2)


def test_generate_on_a_cluster_that_is_not_there(tmp_path, capsys):
    pytest.importorskip("ray")
    from fixrl.harness.cli import main

    code = main(["tasks", "generate", "--repo", str(tmp_path), "--test-cmd", "pytest", "--out", str(tmp_path / "o"),
                 "--ray", "127.0.0.1:1"])
    assert code == 2 and "nothing answers at 127.0.0.1:1" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["tasks", "generate", "--repo", "r", "--test-cmd", "x", "--out", "o", "--heldout-frac", "2"], "between 0 and 1"),
    (["tasks", "generate", "--repo", "r", "--test-cmd", "x", "--out", "o", "--max", "0"], "at least 1"),
    (["tasks", "generate", "--repo", "r", "--test-cmd", "x", "--out", "o", "--operators", "typo"], "invalid choice"),
    (["tasks", "generate", "--repo", "r", "--test-cmd", "x", "--out", "o", "--max-per-function", "0"], "at least 1"),
    (["tasks", "generate", "--repo", "r", "--test-cmd", "x", "--out", "o", "--files"], "expected at least one"),
    (["tasks", "validate", "s", "-j", "zero"], "whole number"),
    (["tasks", "validate", "s", "--backend", "podman"], "invalid choice"),
    (["tasks", "new", "--repo", "r", "--bug", "b"], "--test"),
    (["tasks"], "ACTION"),
])
def test_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(argv)
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_command_module_imports_nothing_heavy():
    """The task commands start without torch, transformers, peft or ray (seconds of start-up)."""
    import subprocess
    import sys

    code = ("import sys, fixrl.harness.cli.commands.tasks; "
            "print(sorted(m for m in ('torch', 'transformers', 'peft', 'ray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_failed_commands_leave_no_suite_behind(tmp_path, capsys):
    """A generation or an import that fails writes nothing: no suite.yaml, no empty tasks/."""
    from suitekit import write_repo

    from fixrl.harness.cli import main

    repo = write_repo(tmp_path / "repo")
    out = tmp_path / "gen"
    assert main(["tasks", "generate", "--repo", str(repo), "--test-cmd", "python -m pytest -q", "--out", str(out),
                 "-j", "1", "--files", "nope.py"]) == 2
    assert "matches none" in capsys.readouterr().err and not out.exists()
    (tmp_path / "i.json").write_text('{"instance_id": "x", "repo": "r", "base_commit": "0000", "patch": "", '
                                     '"test_patch": "", "problem_statement": "", "FAIL_TO_PASS": [], '
                                     '"PASS_TO_PASS": []}')
    out = tmp_path / "imported"
    assert main(["tasks", "import-swebench", str(tmp_path / "i.json"), "--checkout", str(tmp_path / "no-clone"),
                 "--out", str(out)]) == 2
    assert "--checkout" in capsys.readouterr().err and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.json", "repo"]

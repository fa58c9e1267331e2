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


@pytest.mark.parametrize("argv,message", [
    (["tasks", "generate", "--repo", "r", "--test-cmd", "x", "--out", "o", "--heldout-frac", "2"], "between 0 and 1"),
    (["tasks", "generate", "--repo", "r", "--test-cmd", "x", "--out", "o", "--max", "0"], "at least 1"),
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

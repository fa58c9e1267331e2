"""One SWE-bench-style instance with dependencies, built from two real releases of
python-dateutil (which depends on six; its tests need freezegun and hypothesis): 2.8.2 is the
base commit, 2.9.0's fix (submodules imported lazily as attributes of `dateutil`, its
`__init__.py`) is the patch, and 2.9.0's `test_imports.py` (placed where 2.8.2 keeps its tests,
`dateutil/test/`) the test patch. It is imported (the environment detected from the base
commit's packaging files, not the checkout's working tree), validated, passed by the oracle and
exported again with its environment, which a second import restores."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from suitekit import release_instance

from fixrl.harness.cli import main
from fixrl.tasks.format.loader import load_suite

pytestmark = pytest.mark.slow

TESTS = "dateutil/test/test_imports.py"
FAIL_TO_PASS = [f"{TESTS}::test_lazy_import[tz]", f"{TESTS}::test_lazy_import[parser]"]
PASS_TO_PASS = [f"{TESTS}::test_import_version_str", f"{TESTS}::test_import_tz_from",
                f"{TESTS}::test_import_relative_delta_from"]


def _instance(sdist, tmp_path: Path) -> tuple[Path, Path]:
    """(the instance file, the checkout holding its base commit)."""
    checkout = tmp_path / "dateutil"
    path = release_instance(
        checkout, sdist("python-dateutil", "2.8.2"), sdist("python-dateutil", "2.9.0.post0"),
        {"dateutil/__init__.py": "src/dateutil/__init__.py"}, {TESTS: "tests/test_imports.py"},
        instance_id="dateutil__dateutil-2.9.0", repo="dateutil/dateutil",
        problem_statement="`import dateutil; dateutil.tz` raises AttributeError: the submodules are not "
                          "reachable as attributes of the package unless imported by name first.",
        FAIL_TO_PASS=FAIL_TO_PASS, PASS_TO_PASS=PASS_TO_PASS, version="2.9")
    # The working tree moves on after the base commit: the environment must come from the commit.
    (checkout / "requirements-dev.txt").write_text("no-such-package-fixrl==0\n")
    return path, checkout


def test_a_swebench_instance_with_dependencies_round_trips(sdist, tmp_path, capsys):
    instance, checkout = _instance(sdist, tmp_path)
    suite = tmp_path / "suite"
    assert main(["tasks", "import-swebench", str(instance), "--checkout", str(checkout), "--out", str(suite)]) == 0
    (task,) = load_suite(suite).tasks
    assert task.environment is not None
    assert task.environment.model_dump(exclude_defaults=True) == {"install": True,
                                                                  "requirements": ["requirements-dev.txt"]}

    # The fix defines a module __getattr__ / __dir__ that imports by name: what the edit rules
    # refuse by default, relaxed for this suite as their message says.
    with (suite / "suite.yaml").open("a") as f:
        f.write("rules: {relax: [imports, introspection, computed-names, exec, comparison-dunders]}\n")
    capsys.readouterr()
    assert main(["tasks", "validate", str(suite), "--json", "--repeats", "2", "--no-cache"]) == 0, \
        capsys.readouterr().out
    save = tmp_path / "oracle.jsonl"
    assert main(["rollout", "--policy", "oracle", "--suite", str(suite), "--pool-size", "1", "--quiet",
                 "--save", str(save)]) == 0
    assert [json.loads(line)["reward"] for line in save.read_text().splitlines()] == [1.0]

    exported = tmp_path / "out.jsonl"
    assert main(["tasks", "export-swebench", str(suite), "--out", str(exported)]) == 0
    (back,) = [json.loads(line) for line in exported.read_text().splitlines()]
    assert back["base_commit"] == json.loads(instance.read_text())["base_commit"]
    assert back["fixrl"]["environment"] == task.environment.model_dump(mode="json")
    again = tmp_path / "again"
    assert main(["tasks", "import-swebench", str(exported), "--checkout", str(checkout), "--out", str(again)]) == 0
    (task2,) = load_suite(again).tasks
    assert task2.environment == task.environment and task2.env_tag == task.env_tag

"""Real PyPI libraries whose tests need packages (sdists from PyPI, environments built from the
package registry): python-dateutil 2.9.0.post0 (needs six; its tests need freezegun and
hypothesis) goes through generate -> validate -> the oracle on the local backend and on Docker;
validation shows the first line of the real error when a task's environment lacks a package.
The environments are cached (~/.cache/fixrl/envs, images fixrl-env:<hash>): a second run
builds nothing."""
from __future__ import annotations

import json

import pytest
import yaml

from fixrl.harness.cli import main
from fixrl.tasks.check.validate import validate_suite
from fixrl.tasks.format.loader import load_suite
from fixrl.tasks.generate.pipeline import generate

pytestmark = pytest.mark.slow

DATEUTIL = ("python-dateutil", "2.9.0.post0")
TEST_CMD = "python -m pytest -q tests/test_utils.py"


@pytest.fixture(scope="module")
def dateutil_suite(sdist, tmp_path_factory):
    """Two tasks generated from dateutil's utils.py; the suite names the environment it detected."""
    repo = sdist(*DATEUTIL)
    out = tmp_path_factory.mktemp("dateutil") / "suite"
    report = generate(repo, TEST_CMD, out, max_tasks=2, workers=2, files=["src/dateutil/utils.py"], progress=False)
    assert report.valid == 2, report.to_json()
    return out


def _oracle(suite, backend: str, tmp_path) -> list[dict]:
    save = tmp_path / f"oracle-{backend}.jsonl"
    assert main(["rollout", "--policy", "oracle", "--suite", str(suite), "--split", "all", "--pool-size", "1",
                 "--backend", backend, "--quiet", "--save", str(save)]) == 0
    return [json.loads(line) for line in save.read_text().splitlines()]


def test_the_generated_suite_names_its_environment_and_runs_in_it(dateutil_suite, tmp_path):
    config = yaml.safe_load((dateutil_suite / "suite.yaml").read_text())
    assert config["environment"] == {"install": True, "requirements": ["requirements-dev.txt"]}
    tasks = load_suite(dateutil_suite).tasks
    assert all(t.sandbox_image == tasks[0].env_tag for t in tasks)
    # The oracle passes every task: the check ran against the workspace's code (the bug fails it,
    # the fix passes it), never an installed copy of the library.
    rewards = [t["reward"] for t in _oracle(dateutil_suite, "local", tmp_path)]
    assert rewards == [1.0] * len(tasks)


def test_docker_builds_the_same_environment_as_an_image_layer(dateutil_suite, tmp_path, docker_available):
    results = validate_suite(dateutil_suite, backend="docker", jobs=2, repeats=1)
    assert [r.reasons for r in results] == [[]] * len(results)
    rewards = [t["reward"] for t in _oracle(dateutil_suite, "docker", tmp_path)]
    assert rewards == [1.0] * len(results)


def test_validate_shows_the_first_line_of_the_real_error(dateutil_suite, tmp_path, capsys):
    """Without its environment the library cannot import `six` nor its tests `freezegun`: every
    task is invalid, and the text and the JSON both say why in one line."""
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "repo").symlink_to(dateutil_suite / "repo")
    (bare / "tasks").symlink_to(dateutil_suite / "tasks")
    (bare / "checks").symlink_to(dateutil_suite / "checks")
    config = yaml.safe_load((dateutil_suite / "suite.yaml").read_text())
    config.pop("environment")
    (bare / "suite.yaml").write_text(yaml.safe_dump(config))
    assert main(["tasks", "validate", str(bare), "--json", "--repeats", "1", "--no-cache"]) == 1
    out = json.loads(capsys.readouterr().out)
    firsts = [r["first_error"] for r in out["results"]]
    assert all(f and "No module named" in f for f in firsts), firsts
    assert main(["tasks", "validate", str(bare), "--repeats", "1"]) == 1
    text = capsys.readouterr().out
    assert text.count("No module named") >= len(firsts)

"""Plugin parity in the generator: its runs load the environment's pytest plugins, and only
those, as the check does (`sandbox/inside/env_plugins.py`). Before, the generator's baseline
autoloaded every plugin on sys.path while the check loaded none: wcwidth's tests that use
pytest-codspeed's `benchmark` fixture passed at the baseline and failed in every check. Here a
repository's tests use a fixture of the environment's plugin, and the repository holds a
`pytest11` entry point of its own that no run may load. Real environment, real sandboxes."""
from __future__ import annotations

import pytest
import yaml
from suitekit import drop_workspace_plugin, probe_plugin_wheel
from test_pipeline import TESTS, make_repo

from fixrl.tasks.generate.pipeline import generate

USES_PLUGINS = '''

def test_add_all_with_the_environments_fixture(probe_fixture):
    assert add_all([probe_fixture, 1]) == 43


def test_clamp_without_the_repositorys_own_plugin(request):
    with pytest.raises(pytest.FixtureLookupError):
        request.getfixturevalue("evil_fixture")
    assert clamp(50, 0, 42) == 42
'''


@pytest.mark.parametrize("fork", [True, False], ids=["forked-runs", "fresh-interpreters"])
def test_the_generator_and_the_check_load_the_same_plugins(tmp_path, fork):
    repo = make_repo(tmp_path, TESTS + USES_PLUGINS)
    drop_workspace_plugin(repo)
    out = tmp_path / "suite"
    out.mkdir()
    (out / "suite.yaml").write_text(yaml.safe_dump({"environment": {"packages": [str(probe_plugin_wheel())]}}))
    report = generate(repo, "python -m pytest -q", out, max_tasks=3, seed=2, workers=2, progress=False,
                      functions=["add_all", "clamp"], max_baseline_failures=0.0, fork=fork)
    assert report.excluded_tests["count"] == 0
    assert report.tests == 12
    assert report.valid == 3, report.invalid_reasons
    checked = set()
    for f in (out / "tasks" / "generated").glob("*.yaml"):
        checked |= set(yaml.safe_load(f.read_text())["check"]["tests"])
    assert "tests/test_ops.py::test_add_all_with_the_environments_fixture" in checked

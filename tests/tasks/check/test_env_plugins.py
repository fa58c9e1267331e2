"""Plugin parity: every run of a repository's tests loads exactly the pytest plugins its
environment installs (recorded on the host when the environment is built), autoloading off. A
`pytest11` entry point the workspace holds is never loaded into the check (an agent could drop
one there: the workspace is on sys.path), while the environment's own plugin is (wcwidth's tests
use pytest-codspeed's `benchmark` fixture: "fixture 'benchmark' not found" only in the check
made its tasks invalid, or a correct fix a false 0). A tiny local plugin wheel is installed into
a real environment (`fixrl.sandbox.environment`, cached); real sandboxes, no mocks."""
from __future__ import annotations

import json
import textwrap

import pytest
from suitekit import drop_workspace_plugin, fix_task, probe_plugin_wheel, write_repo

from fixrl.sandbox import SandboxPool
from fixrl.sandbox.environment import EnvSpec, build_environment, env_dir
from fixrl.sandbox.inside.env_plugins import PLUGINS_FILE
from fixrl.tasks import Task, run_check

HIDDEN = textwrap.dedent('''\
    import pytest

    from calc import add


    def test_env_plugin_is_loaded(probe_fixture):
        assert add(probe_fixture, 0) == 42


    def test_workspace_plugin_is_not_loaded(request):
        with pytest.raises(pytest.FixtureLookupError):
            request.getfixturevalue("evil_fixture")
''')
HIDDEN_TESTS = ["tests/test_hidden.py::test_env_plugin_is_loaded",
                "tests/test_hidden.py::test_workspace_plugin_is_not_loaded"]


@pytest.fixture(scope="module")
def env_tag():
    # A fixed path: the environment's tag hashes the spec, so a second run builds nothing.
    return build_environment(EnvSpec(packages=(str(probe_plugin_wheel()),)), "local")


def test_the_environment_records_its_plugins_on_the_host(env_tag):
    (site,) = (env_dir(env_tag) / "lib").glob("python3*/site-packages")
    entries = json.loads((site / PLUGINS_FILE).read_text())
    assert {"name": "probe", "value": "fixrl_probe_plugin", "dist": "fixrl_probe_plugin"} in entries


@pytest.mark.parametrize("forking", [False, True], ids=["fresh", "forking"])
def test_the_check_loads_the_environments_plugin_and_not_the_workspaces(env_tag, tmp_path, forking):
    ws = write_repo(tmp_path / "ws")
    drop_workspace_plugin(ws)
    check = {"timeout": 60, "files": {"tests/test_hidden.py": HIDDEN}, "tests": HIDDEN_TESTS}
    task = Task.model_validate(fix_task("t", repo=str(ws), check=check))
    with SandboxPool(1, backend="local", image=env_tag, forking=forking) as pool, pool.acquire(ws) as sb:
        r = run_check(task, sb)
    assert r.outcome == "pass", (r.reason, r.output[-3000:])


@pytest.mark.slow
@pytest.mark.docker
def test_the_same_on_docker(tmp_path, docker_available):
    """The one-shot launcher ships the plugin reader; the image's dist-packages hold the record."""
    image = build_environment(EnvSpec(packages=(str(probe_plugin_wheel()),)), "docker")
    ws = write_repo(tmp_path / "ws")
    drop_workspace_plugin(ws)
    check = {"timeout": 60, "files": {"tests/test_hidden.py": HIDDEN}, "tests": HIDDEN_TESTS}
    task = Task.model_validate(fix_task("t", repo=str(ws), check=check))
    with SandboxPool(1, backend="docker", image=image) as pool, pool.acquire(ws) as sb:
        r = run_check(task, sb)
    assert r.outcome == "pass", (r.reason, r.output[-3000:])

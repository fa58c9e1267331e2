"""The task format's `environment:` (tasks.format.environment): detection from packaging files,
suite defaults, old files without it, and errors that name the field."""
from __future__ import annotations

import pytest
import yaml

from fixrl.tasks.format.environment import detect_environment
from fixrl.tasks.format.loader import TaskError, load_suite

TASK = {"id": "t1", "repo": "repo", "issue": "add is wrong", "bug_files": {"m.py": "x = 2\n"},
        "fix": "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 2\n+x = 1\n",
        "check": {"command": "python -m pytest -q t.py", "files": {"t.py": "def test_x():\n    pass\n"}}}


def _suite(root, suite: dict | None = None, task: dict | None = None):
    (root / "repo").mkdir(parents=True)
    (root / "repo" / "m.py").write_text("x = 1\n")
    (root / "repo" / "requirements-test.txt").write_text("freezegun\n")
    (root / "tasks").mkdir()
    (root / "tasks" / "t1.yaml").write_text(yaml.safe_dump({**TASK, **(task or {})}))
    if suite is not None:
        (root / "suite.yaml").write_text(yaml.safe_dump(suite))
    return root


def test_detection_reads_each_kind_of_packaging_file(tmp_path):
    pyproject = tmp_path / "a"
    pyproject.mkdir()
    (pyproject / "pyproject.toml").write_text(
        '[project]\nname = "a"\ndependencies = ["attrs>=22"]\n[project.optional-dependencies]\n'
        'test = ["pytest-mock"]\ndocs = ["sphinx"]\n[dependency-groups]\ntests = ["hypothesis", "pytest>=7"]\n')
    assert detect_environment(pyproject) == {"install": True, "extras": ["test"], "packages": ["hypothesis"]}

    cfg = tmp_path / "b"
    cfg.mkdir()
    (cfg / "setup.cfg").write_text("[options]\ninstall_requires =\n    six\n[options.extras_require]\ntesting = mock\n")
    (cfg / "tox.ini").write_text("[testenv]\ndeps =\n    freezegun\n    -r requirements/ci.txt\n    {env:X}\n"
                                 "    py311: pytz\n    -e .\n")
    (cfg / "requirements").mkdir()
    (cfg / "requirements" / "ci.txt").write_text("hypothesis\n")
    assert detect_environment(cfg) == {"install": True, "extras": ["testing"],
                                       "requirements": ["requirements/ci.txt"], "packages": ["freezegun", "pytz"]}

    setup_py = tmp_path / "c"
    setup_py.mkdir()
    (setup_py / "setup.py").write_text("from setuptools import setup\nsetup(name='c', install_requires=['six'])\n")
    (setup_py / "requirements-dev.txt").write_text("freezegun\n")
    assert detect_environment(setup_py) == {"install": True, "requirements": ["requirements-dev.txt"]}

    plain = tmp_path / "d"
    plain.mkdir()
    (plain / "pyproject.toml").write_text('[project]\nname = "d"\n[project.optional-dependencies]\n')
    (plain / "tox.ini").write_text("[testenv]\ndeps = pytest\n")
    assert detect_environment(plain) is None  # nothing beyond pytest: the sandbox's own interpreter


def test_an_unreadable_ini_file_names_nothing_and_the_others_still_count(tmp_path):
    """setup.cfg and tox.ini are read leniently: one that is not an ini file (a duplicate
    section) or not UTF-8 adds nothing, and detection goes on with the other files."""
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires = six\n[options]\n")
    (tmp_path / "tox.ini").write_bytes(b"[testenv]\ndeps = freezegun \xff\n")
    (tmp_path / "requirements-test.txt").write_text("hypothesis\n")
    assert detect_environment(tmp_path) == {"requirements": ["requirements-test.txt"]}
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires = six\n")
    (tmp_path / "tox.ini").write_text("[testenv]\ndeps = freezegun\n")
    assert detect_environment(tmp_path) == {"install": True, "requirements": ["requirements-test.txt"],
                                            "packages": ["freezegun"]}


def test_setup_py_extras_whose_packages_are_a_variable_are_still_found(tmp_path):
    """configargparse 1.9.0: `extras_require={"yaml": ["PyYAML"], "test": tests_require}` is no
    literal as a whole; detection said "no environment needed", the local backend's tests then
    imported PyYAML from fixrl's own interpreter and Docker's, correctly, could not (0 tasks)."""
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\ntests_require = ['PyYAML', 'pytest']\n"
        "setup(name='c', install_requires=[], extras_require={'yaml': ['PyYAML'], 'test': tests_require})\n")
    assert detect_environment(tmp_path) == {"install": True, "extras": ["test"]}


def test_tox_factor_conditions_keep_test_lines_and_drop_docs_and_lint_ones(tmp_path):
    # pyparsing 3.3.3's tox.ini: `extras = unit: diagrams` was read as an extra named "unit: diagrams"
    (tmp_path / "tox.ini").write_text(
        "[testenv]\ndeps =\n    unit: pytest\n    unit-!py315t: matplotlib; python_version <= '3.15'\n"
        "    doctest: sphinx\n    docs,lint: furo\n    !pypy: cffi\n    py311,docs: pytz\n"
        "    git+https://example.org/x.git\nextras = unit: diagrams\n    docs: docs\n")
    assert detect_environment(tmp_path) == {
        "install": True, "extras": ["diagrams"],
        "packages": ["matplotlib; python_version <= '3.15'", "cffi", "pytz", "git+https://example.org/x.git"]}


def test_old_files_without_an_environment_load_as_before(tmp_path):
    task = load_suite(_suite(tmp_path, {"name": "s"})).tasks[0]
    assert task.environment is None and task.env_tag is None and task.sandbox_image is None
    assert "environment" not in task.model_dump(exclude_defaults=True)


def test_the_suite_environment_reaches_every_task_and_names_its_build(tmp_path):
    suite = _suite(tmp_path, {"environment": {"requirements": ["requirements-test.txt"], "packages": ["six"]}})
    task = load_suite(suite).tasks[0]
    assert task.environment.packages == ["six"] and task.environment.requirements == ["requirements-test.txt"]
    assert task.sandbox_image == task.env_tag and task.env_tag.startswith("fixrl-env:")
    tag = task.env_tag
    (suite / "repo" / "requirements-test.txt").write_text("freezegun==1.5.1\n")  # what it reads is in the hash
    assert load_suite(suite).tasks[0].env_tag != tag


@pytest.mark.parametrize("env,message", [
    ({"extras": ["test"]}, "install: true"),
    ({"requirements": ["../outside.txt"]}, "relative path inside the repository"),
    ({"requirements": ["missing.txt"]}, "'missing.txt' is not a file of the repository"),
    ({"python": "three"}, "major.minor"),
    ({"pakages": ["six"]}, "pakages"),
])
def test_a_bad_environment_is_named(tmp_path, env, message):
    with pytest.raises(TaskError) as err:
        load_suite(_suite(tmp_path, {"name": "s"}, {"environment": env}))
    assert message in str(err.value) and ("environment" in str(err.value))


def test_env_commands_say_what_a_repository_needs(tmp_path, capsys):
    from fixrl.harness.cli import main

    plain = tmp_path / "plain"
    plain.mkdir()
    assert main(["env", "detect", str(plain)]) == 0
    assert "no environment needed" in capsys.readouterr().out
    assert main(["env", "build", str(plain), "--json"]) == 0
    assert '"environments": []' in capsys.readouterr().out
    (plain / "requirements-test.txt").write_text("freezegun\n")
    assert main(["env", "detect", str(plain)]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == {"environment": {"requirements": ["requirements-test.txt"]}}


def test_a_sandbox_of_an_environment_not_built_says_how_to_build_it(tmp_path, monkeypatch):
    from fixrl.sandbox import SandboxError, open_sandbox

    monkeypatch.setenv("FIXRL_ENV_DIR", str(tmp_path / "envs"))
    with pytest.raises(SandboxError, match="fixrl env build"):
        open_sandbox(tmp_path, backend="local", image="fixrl-env:0123456789abcdef")


@pytest.mark.slow
def test_env_build_says_each_step_and_each_package_on_stderr(tmp_path, monkeypatch, capsys):
    """A build of a minute is never silent: each step (venv, resolve and download, offline
    install) and pip's news of each package come on stderr as they happen; what was built on
    stdout. Needs the package registry (one tiny package)."""
    from fixrl.harness.cli import main

    monkeypatch.setenv("FIXRL_ENV_DIR", str(tmp_path / "envs"))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements-test.txt").write_text("iniconfig\n")
    assert main(["env", "build", str(repo)]) == 0
    out, err = capsys.readouterr()
    steps = ["making the virtual environment", "resolving and downloading", "installing offline"]
    starts = [err.index(f": {step}\n") for step in steps]
    assert starts == sorted(starts), err
    assert all(f": {step}: done (" in err for step in steps), err
    news = err[starts[1]:]
    assert "Collecting iniconfig" in news and "Installing collected packages:" in news, err
    assert "Successfully installed" in news and "iniconfig-" in news.split("Successfully installed")[1], err
    assert "ready" in out and "Collecting" not in out
    assert main(["env", "build", str(repo)]) == 0
    assert "cached at" in capsys.readouterr().err


@pytest.mark.slow
def test_two_processes_building_one_environment_build_it_once(tmp_path):
    """Two `fixrl env build` of the same spec at once (parallel test workers, two runs sharing
    the cache): one builds, the other waits for its lock and finds it built -- never two builds,
    the second deleting the first's environment under it. Needs the package registry."""
    import os
    import subprocess
    import sys

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements-test.txt").write_text("iniconfig\n")
    env = {**os.environ, "FIXRL_ENV_DIR": str(tmp_path / "envs")}
    cmd = [sys.executable, "-m", "fixrl.harness.cli", "env", "build", str(repo)]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    said = sorted(("built at" in err, "cached at" in err) for _, err in outs)
    assert said == [(False, True), (True, False)], outs  # one built, the other found it built

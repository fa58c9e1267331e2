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


def _files(root, files: dict[str, str]):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_one_requirement_file_per_pip_compile_family_and_never_docs_or_typing(tmp_path):
    """jinja2 3.1.6's `requirements/`: pip-compile families (`x.in` and the `x.txt` compiled
    from it), `tests37.txt` compiled for Python 3.7 beside `tests.txt`, and `dev`, `docs`,
    `typing`, `build` families with their own pins. Installing both test files (as before) asks
    pip for two pins of each package; docs and typing pins conflict with the tests' too."""
    names = ["build", "dev", "docs", "tests", "typing"]
    _files(tmp_path, {f"requirements/{n}.{ext}": "pytest\n" for n in names for ext in ("in", "txt")})
    _files(tmp_path, {"requirements/tests37.txt": "pytest==7.4.4\n",
                      "tox.ini": "[testenv]\ndeps = -r requirements/tests.txt\n[testenv:py37]\n"
                                 "deps = -r requirements/tests37.txt\n[testenv:docs]\ndeps = -r requirements/docs.txt\n",
                      "pyproject.toml": '[project]\nname = "jinja2"\ndependencies = ["MarkupSafe>=2.0"]\n'})
    assert detect_environment(tmp_path) == {"install": True, "requirements": ["requirements/tests.txt"]}


def test_of_per_python_files_the_exact_python_then_the_in_file_then_the_nearest_older(tmp_path):
    from fixrl.sandbox.environment import host_python

    minor = int(host_python().split(".")[1])
    reqs = tmp_path / "requirements"
    _files(tmp_path, {f"requirements/tests-py3{m}.txt": f"pytest  # {m}\n" for m in (minor - 2, minor - 1, minor + 1)})
    _files(tmp_path, {"requirements/tests.in": "pytest\n", f"requirements/docs-py3{minor}.txt": "sphinx\n"})
    assert detect_environment(tmp_path) == {"requirements": ["requirements/tests.in"]}
    (reqs / "tests.in").unlink()
    assert detect_environment(tmp_path) == {"requirements": [f"requirements/tests-py3{minor - 1}.txt"]}
    (reqs / f"tests-py3{minor}.txt").write_text("pytest\n")
    assert detect_environment(tmp_path) == {"requirements": [f"requirements/tests-py3{minor}.txt"]}
    # no test family at all: the dev family and the main requirements.txt, never docs
    for f in reqs.glob("tests*"):
        f.unlink()
    _files(tmp_path, {"requirements.txt": "six\n", "requirements-dev.txt": "freezegun\n",
                      "requirements-docs.txt": "sphinx\n", "requirements/dev.in": "-r docs.in\nfreezegun\n"})
    assert detect_environment(tmp_path) == {"requirements": ["requirements.txt", "requirements-dev.txt",
                                                             "requirements/dev.in"]}


FLASK_PYPROJECT = '''[project]
name = "flask"
dependencies = ["blinker>=1.9.0", "importlib-metadata>=3.6.0; python_version < '3.10'", "werkzeug>=3.1.0"]
[project.optional-dependencies]
async = ["asgiref>=3.2"]
[dependency-groups]
dev = ["ruff", {include-group = "Tests"}]
docs = ["sphinx<9"]
tests = ["asgiref", "pytest", {include-group = "pre_commit"}, {include-group = "tests"}]
pre-commit = ["pre-commit", {include-group = "tests"}]
'''

FLASK_LOCK = '''version = 1
requires-python = ">=3.9"

[[package]]
name = "asgiref"
version = "3.11.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "flask"
version = "3.1.3"
source = { editable = "." }

[[package]]
name = "pytest"
version = "8.4.2"
source = { registry = "https://pypi.org/simple" }
resolution-markers = ["python_full_version < '3.10'"]

[[package]]
name = "pytest"
version = "9.0.2"
source = { registry = "https://pypi.org/simple" }
resolution-markers = ["python_full_version >= '3.10'"]

[[package]]
name = "pre-commit"
version = "4.0.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "werkzeug"
version = "3.1.5"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "blinker"
version = "1.9.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "importlib-metadata"
version = "8.0.0"
source = { registry = "https://pypi.org/simple" }
'''


def test_dependency_groups_follow_include_group_and_uv_lock_pins_what_is_named(tmp_path):
    """flask 3.1.3: its test dependencies are PEP 735 `[dependency-groups] tests` (with
    `{include-group = ...}` tables, which were dropped), and its `uv.lock` holds the versions it
    is tested with (werkzeug 3.1.5, pytest 9.0.x): unpinned, pip took the newest werkzeug and
    fixrl's pytest, and flask's own tests failed."""
    _files(tmp_path, {"pyproject.toml": FLASK_PYPROJECT})
    assert detect_environment(tmp_path) == {"install": True, "packages": ["asgiref", "pre-commit"]}
    _files(tmp_path, {"uv.lock": FLASK_LOCK})
    # the project's dependencies and pytest are pinned too; a marker false here pins nothing
    assert detect_environment(tmp_path) == {
        "install": True, "packages": ["asgiref==3.11.0", "pre-commit==4.0.0", "blinker==1.9.0", "werkzeug==3.1.5",
                                      "pytest==9.0.2"]}


def test_a_lock_outside_the_declared_range_or_unreadable_pins_nothing(tmp_path):
    _files(tmp_path, {"pyproject.toml": '[project]\nname = "a"\ndependencies = ["werkzeug>=4"]\n',
                      "uv.lock": FLASK_LOCK})
    assert detect_environment(tmp_path) == {"install": True, "packages": ["pytest==9.0.2"]}
    (tmp_path / "uv.lock").write_text("[[package]\n")
    assert detect_environment(tmp_path) == {"install": True}


@pytest.mark.slow
def test_a_failing_build_shows_pips_errors_first_and_the_entry_that_brought_them(tmp_path, monkeypatch):
    """A real pip run that fails (a project the package registry does not have, in the second
    requirement file): the error's first lines are pip's `ERROR:` lines, then the spec's entry
    that brought the requirement and how to fix it. Before, the last 12 lines of pip's output
    (index notices, warnings) were all, and nothing said which entry of the spec was at fault."""
    from fixrl.sandbox.environment import EnvBuildError, EnvSpec, build_local

    monkeypatch.setenv("FIXRL_ENV_DIR", str(tmp_path / "envs"))
    repo = _files(tmp_path / "repo", {"requirements/tests.txt": "iniconfig\n",
                                      "requirements/docs.txt": "fixrl-no-such-project-4b1d==1.0\n"})
    spec = EnvSpec(repo=str(repo), requirements=("requirements/tests.txt", "requirements/docs.txt"),
                   packages=("iniconfig",))
    with pytest.raises(EnvBuildError) as err:
        build_local(spec)
    lines = str(err.value).splitlines()
    assert lines[0] == "resolving and downloading failed (exit 1):", lines
    assert lines[1].startswith("ERROR:") and "fixrl-no-such-project-4b1d" in lines[1], lines
    blamed = lines[lines.index("brought in by:") + 1:]
    assert blamed[0] == "  environment.requirements[1]: requirements/docs.txt", lines
    assert "environment.requirements[0]" not in str(err.value) and "environment.packages" not in str(err.value)
    assert "suite.yaml" in blamed[1] and "fixrl env detect" in blamed[1], lines

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


def test_a_repository_whose_tests_read_installed_metadata_is_installed(tmp_path):
    """click 8.5.1: no dependency, but tests/test_deprecations.py calls
    `importlib.metadata.version("click")` at import; without the repository installed it does
    not collect (the Docker image has no click; fixrl's own interpreter happens to have one)."""
    repo = tmp_path / "click"
    (repo / "tests").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[project]\nname = "click"\nversion = "1"\n')
    (repo / "tests" / "test_plain.py").write_text("def test_x():\n    pass\n")
    assert detect_environment(repo) is None
    (repo / "tests" / "test_deprecations.py").write_text("import importlib.metadata\n\n"
                                                        "VERSION = importlib.metadata.version('click')\n")
    assert detect_environment(repo) == {"install": True}
    (repo / "pyproject.toml").unlink()
    assert detect_environment(repo) is None, "nothing to install"

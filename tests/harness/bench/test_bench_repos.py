"""`fixrl bench repos`: the conformance table on one tiny released library (inflection, a
module and one test file), downloaded as released; the table names the issue's libraries."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from fixrl.harness.bench.repos import LIBS, TARGET, Config, Lib, build_environment, library_environment, run_lib
from fixrl.harness.cli import main

ISSUE_LIBS = {"click", "flask", "itsdangerous", "werkzeug", "jinja2", "markupsafe", "attrs", "cattrs", "marshmallow",
              "python-dateutil", "pyparsing", "sqlparse", "wcwidth", "docopt", "toolz", "more-itertools",
              "cachetools", "tabulate", "boltons", "inflection"}


def _cache() -> str:
    """The sdists the tests' `sdist` fixture downloads too (tests/conftest.py)."""
    return str(Path(os.environ.get("FIXRL_CACHE", Path.home() / ".cache" / "fixrl")) / "sdists")


def test_the_table_covers_the_issues_libraries():
    covered = {lib.stands_in_for or lib.name for lib in LIBS}
    assert covered == ISSUE_LIBS and len(LIBS) == 20
    assert all(lib.note for lib in LIBS if lib.stands_in_for)


def test_an_unknown_library_is_refused(capsys):
    assert main(["bench", "repos", "--libs", "nosuchlib"]) == 2
    assert "not in the table" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_repos_on_one_tiny_library(tmp_path, capsys):
    """Download, generate (validated), the pooled oracle and blind episodes, one JSON row."""
    code = main(["bench", "repos", "--json", "--libs", "inflection", "--max-tasks", "1", "--repeats", "1", "--cache", _cache(),
                 "--out", str(tmp_path / "suites")])
    out = capsys.readouterr().out
    if code != 0 and "cannot download" in out and not os.environ.get("CI"):
        pytest.skip("no PyPI here")
    assert code == 0
    result = json.loads(out)
    (row,) = result["rows"]
    assert row["library"] == "inflection" and row["env"] == "none needed"
    assert row["emitted"] >= 1 and row["valid"] == row["emitted"] - row["invalid"] >= 1
    assert row["oracle"] == {"passed": row["valid"], "episodes": row["valid"], "errors": 0, "rate": 1.0}
    assert row["blind"]["episodes"] == row["valid"] and row["valid_but_oracle_failed"] == []
    assert row["minutes"] > 0 and row["candidates"] > 0
    # under the target, the row says why (here: --max-tasks 1)
    assert (row["reason"] is None) == (row["valid"] >= TARGET)
    assert (tmp_path / "suites" / "inflection-0.5.1" / "suite.yaml").exists()


def _fake_sdist(cache: Path, lib: Lib) -> Path:
    """An sdist as `fetch_sdist` leaves it unpacked (no download): tests/ and packaging files."""
    top = cache / f"{lib.name}-{lib.version}" / "src" / f"{lib.name}-{lib.version}"
    (top / "requirements").mkdir(parents=True)
    (top / "tests").mkdir()
    (top / "tests" / "test_it.py").write_text("def test_it():\n    pass\n")
    (top / "requirements" / "tests.txt").write_text("# pinned\nfreezegun==1.4.0\n    # via -r tests.in\npytest==8.1.1\n")
    (top / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "1"\n'
                                        'dependencies = ["werkzeug>=3"]\n[project.optional-dependencies]\n'
                                        'tests = ["hypothesis"]\ndocs = ["sphinx"]\n')
    (top / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: demo\nRequires-Dist: werkzeug>=3\n"
                                  "Requires-Dist: hypothesis ; extra == 'tests'\nRequires-Dist: sphinx ; extra == 'docs'\n")
    (cache / f"{lib.name}-{lib.version}" / ".unpacked").write_text("demo-1.tar.gz")
    return top


def test_the_environment_is_detected_and_gets_the_needs_detection_misses(tmp_path):
    """Detected from the packaging files (requirement file, install with the test extra); a
    need they name by a dependency, a pinned line or the test extra is not added again, one
    they miss (or name only under another extra) is."""
    lib = Lib("demo", "1", "python -m pytest -q tests", needs=("freezegun", "Werkzeug", "hypothesis", "sphinx", "blinker"))
    src = _fake_sdist(tmp_path, lib)
    env, added = library_environment(lib, src)
    assert env == {"install": True, "extras": ["tests"], "requirements": ["requirements/tests.txt"],
                   "packages": ["sphinx", "blinker"]}
    assert added == ("sphinx", "blinker")
    plain = Lib("plain", "1", "python -m pytest -q")
    (tmp_path / "plain").mkdir()
    assert library_environment(plain, tmp_path / "plain") == (None, ())
    built = build_environment(None, tmp_path / "plain", "local", tmp_path / "suite")
    assert built.tag is None and built.note == "none needed"
    assert not (tmp_path / "suite").exists()  # no environment, no suite.yaml made for it


def test_a_library_whose_environment_cannot_be_built_is_not_run(tmp_path, monkeypatch):
    """Every library runs in its environment, built before the generator: one that cannot be
    built (here: pip offline) stops the library with the build's error, the suite.yaml keeps
    the environment the generator would have read, and nothing is generated."""
    lib = Lib("demo", "1", "python -m pytest -q tests", needs=("blinker",))
    _fake_sdist(tmp_path / "cache", lib)
    monkeypatch.setenv("FIXRL_ENV_DIR", str(tmp_path / "envs"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    row = run_lib(lib, Config(), tmp_path / "cache", tmp_path / "out", lambda: None)
    assert row.reason.startswith("environment: ") and "failed" in row.reason and row.emitted == 0
    assert row.env_added == ["blinker"]
    suite = yaml.safe_load((tmp_path / "out" / "demo-1" / "suite.yaml").read_text())
    assert suite["environment"]["packages"] == ["blinker"] and suite["environment"]["install"] is True
    assert not list((tmp_path / "envs").glob("[0-9a-f]*"))  # no half-built environment left as built


@pytest.mark.slow
def test_bench_repos_on_a_library_with_dependencies(tmp_path, capsys):
    """itsdangerous: its tests import freezegun (requirements/tests.txt), so its environment is
    built and the generator, validation and episodes run in it; freezegun swapping pytest's
    clocks is not tampering (every emitted task valid, the oracle passes all)."""
    code = main(["bench", "repos", "--json", "--libs", "itsdangerous", "--max-tasks", "1", "--repeats", "1",
                 "--cache", _cache(), "--out", str(tmp_path / "suites")])
    out = capsys.readouterr().out
    if code != 0 and "cannot download" in out and not os.environ.get("CI"):
        pytest.skip("no PyPI here")
    assert code == 0
    (row,) = json.loads(out)["rows"]
    if ("cannot download" in (row["reason"] or "") or "resolving and downloading failed" in (row["reason"] or "")) \
            and not os.environ.get("CI"):
        pytest.skip(f"no PyPI here: {row['reason']}")
    assert row["environment"] == {"requirements": ["requirements/tests.txt"]} and row["env"].startswith("fixrl-env:")
    assert row["emitted"] == row["valid"] == 1 and row["invalid"] == 0
    assert row["oracle"]["rate"] == 1.0 and row["valid_but_oracle_failed"] == []
    suite = yaml.safe_load((tmp_path / "suites" / "itsdangerous-2.2.0" / "suite.yaml").read_text())
    assert suite["environment"] == row["environment"]

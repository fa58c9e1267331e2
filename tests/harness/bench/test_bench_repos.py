"""`fixrl bench repos`: the conformance table on one tiny released library (inflection, a
module and one test file), downloaded as released; the table names the issue's libraries."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fixrl.harness.bench.repos import LIBS, TARGET
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


def test_a_library_that_needs_packages_says_so(tmp_path, capsys):
    """itsdangerous' tests import freezegun: no environment can provide it yet, so it is not run
    (and the row says which packages it needs)."""
    code = main(["bench", "repos", "--json", "--libs", "itsdangerous", "--cache", _cache(),
                 "--out", str(tmp_path / "suites")])
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    if "cannot download" in (row["reason"] or "") and not os.environ.get("CI"):
        pytest.skip("no PyPI here")
    assert row["reason"].startswith("not run: needs freezegun") and row["emitted"] == 0

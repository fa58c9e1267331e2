"""`fixrl bench generate` on a tiny repository: every arm tests the same candidates, and the
selected arms decide them as the whole suite does."""
from __future__ import annotations

import json

import pytest

from fixrl.harness.cli import main


@pytest.mark.slow
def test_bench_generate_json(tmp_path, capsys):
    from genkit import make_shop_repo

    repo = make_shop_repo(tmp_path)
    code = main(["bench", "generate", "--json", "--repo", str(repo), "--test-cmd", "python -m pytest -q",
                 "--candidates", "4", "--workers", "2"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["candidates"] == 4 and result["tests"] == 6
    assert [a["arm"] for a in result["arms"]] == ["whole suite, fresh interpreter", "whole suite, forked",
                                                   "selected tests, fresh interpreter", "selected tests, forked"]
    assert all(a["misses"] == 0 and a["seconds"] > 0 for a in result["arms"])
    assert result["arms"][0]["speedup"] == 1.0 and result["functions_covered"] == 4


def test_bench_generate_needs_a_repository(capsys):
    assert main(["bench", "generate", "--repo", "/nonexistent/repo"]) == 2
    assert "is not a directory" in capsys.readouterr().err

"""A real release diff judged by the guard: cattrs 23.2.2 as the base commit, 23.2.3's source
changes as the fix and its new `tests/test_any.py` as the check. The changed
`converters.py` is the first module to import attrs (installed, unchanged), and attrs,
typing and typing_extensions read their callers' frames while it is imported: that is
installed code doing what it always does, never the agent's, so the reference fix passes
and the instance validates (a false 0 before)."""
from __future__ import annotations

import json

import pytest
from suitekit import release_instance

from fixrl.harness.cli import main

pytestmark = pytest.mark.slow

SRC = ["src/cattrs/converters.py", "src/cattrs/gen/__init__.py", "src/cattrs/gen/_lc.py", "src/cattrs/gen/typeddicts.py"]
TEST = "tests/test_any.py::test_unstructuring_dict_of_any"
FAIL_TO_PASS = [f"{TEST}[{cls}-{detailed}]" for cls in ("BaseConverter", "Converter") for detailed in ("True", "False")]
# The whole suite runs past the public test timeout (hypothesis), and tests/test_preconf.py needs
# serialisation extras (pymongo, msgspec, ...) no test dependency group names: two fast files.
PUBLIC = "public_tests: python -m pytest -q tests/test_gen.py tests/test_generics.py\n"


def test_the_cattrs_release_diff_validates_under_the_guard(sdist, tmp_path, capsys):
    checkout = tmp_path / "cattrs"
    instance = release_instance(
        checkout, sdist("cattrs", "23.2.2"), sdist("cattrs", "23.2.3"), {p: p for p in SRC},
        {p: p for p in ("tests/test_any.py", "tests/conftest.py")}, added=("tests/test_any.py",),
        instance_id="cattrs__cattrs-23.2.3", repo="python-attrs/cattrs",
        problem_statement="Unstructuring a `Dict[str, Any]` whose values are attrs instances returns the "
                          "instances: values typed as `Any` must use runtime dispatch.",
        FAIL_TO_PASS=FAIL_TO_PASS, PASS_TO_PASS=[], version="23.2")
    suite = tmp_path / "suite"
    assert main(["tasks", "import-swebench", str(instance), "--checkout", str(checkout), "--out", str(suite)]) == 0
    with (suite / "suite.yaml").open("a") as f:
        f.write("defaults:\n  " + PUBLIC)
    capsys.readouterr()
    code = main(["tasks", "validate", str(suite), "--json", "--repeats", "2", "--no-cache"])
    out = json.loads(capsys.readouterr().out)
    (result,) = out["results"]
    assert result["verdicts"] == {"buggy state": ["fail", "fail"], "reference fix": ["pass", "pass"]}, result
    assert code == 0 and result["ok"], result["reasons"]

"""Test ids with escapes and non-ASCII characters (pytest writes `test_x[\\xe9]` for 'é' and
`test_x[a\\nb]` for a newline) round-trip from the baseline's report through the task file
(YAML, the check's shell command) to the check's per-test verdicts: a correct fix passes,
none of them is reported missing (a false 0). Real generator, real sandboxes."""
from __future__ import annotations

import yaml
from test_pipeline import make_repo

from fixrl.tasks import load_suite

TEXT_TESTS = '''\
import pytest

from calc.ops import double, shout


@pytest.mark.parametrize("x", range(8))
def test_double(x):
    assert double(x) == x + x


@pytest.mark.parametrize("s, want", [("\\xe9t\\xe9", "\\xc9T\\xc9"), ("a\\nb", "A\\nB"), ("a\\\\nb", "A\\\\NB"),
                                     ("tab\\there", "TAB\\tHERE")])
def test_shout(s, want):
    assert shout(s) == want


@pytest.mark.parametrize("s", ["caf\\u00e9 \\u2603", "q'uote\\"d $x"], ids=["caf\\u00e9 \\u2603", "q'uote\\"d $x"])
def test_shout_keeps_length(s):
    assert len(shout(s)) == len(s)
'''

OPS = '''\
def shout(s, limit=100):
    out = []
    for ch in s:
        if len(out) < limit:
            out.append(ch.upper())
    return "".join(out)


def double(x):
    return x * 2
'''


def test_escaped_and_non_ascii_ids_round_trip_to_the_check(tmp_path):
    from fixrl.tasks.generate.pipeline import generate

    repo = make_repo(tmp_path, TEXT_TESTS)
    (repo / "calc" / "ops.py").write_text(OPS)
    out = tmp_path / "suite"
    report = generate(repo, "python -m pytest -q", out, max_tasks=3, seed=0, workers=2, progress=False,
                      functions=["shout"])
    assert report.tests == 14 and not report.excluded_tests["count"]
    assert report.valid >= 1, report.invalid_reasons
    assert not report.invalid_reasons, report.invalid_reasons
    ids = set()
    for task in load_suite(out).tasks:
        ids |= set(task.check.tests)
        raw = yaml.safe_load((out / "tasks" / "generated" / f"{task.id}.yaml").read_text(encoding="utf-8"))
        assert raw["check"]["tests"] == task.check.tests
    assert {i for i in ids if "test_shout" in i} == {
        "tests/test_ops.py::test_shout[\\xe9t\\xe9-\\xc9T\\xc9]", "tests/test_ops.py::test_shout[a\\\\nb-A\\\\NB]",
        "tests/test_ops.py::test_shout[a\\nb-A\\nB]", "tests/test_ops.py::test_shout[tab\\there-TAB\\tHERE]",
        "tests/test_ops.py::test_shout_keeps_length[caf\\xe9 \\u2603]",
        "tests/test_ops.py::test_shout_keeps_length[q'uote\"d $x]"}, ids

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

from calc.ops import shout


@pytest.mark.parametrize("s, want", [("\\xe9t\\xe9", "\\xc9T\\xc9"), ("a\\nb", "A\\nB"), ("a\\\\nb", "A\\\\NB"),
                                     ("tab\\there", "TAB\\tHERE")])
def test_shout(s, want):
    assert shout(s) == want


@pytest.mark.parametrize("s", ["caf\\u00e9 \\u2603", "q'uote\\"d $x"], ids=["caf\\u00e9 \\u2603", "q'uote\\"d $x"])
def test_shout_keeps_length(s):
    assert len(shout(s)) == len(s)
'''

OPS = '''\
def shout(s):
    out = []
    for ch in s:
        out.append(ch.upper())
    return "".join(out)
'''


def test_escaped_and_non_ascii_ids_round_trip_to_the_check(tmp_path):
    from fixrl.tasks.generate.pipeline import generate

    repo = make_repo(tmp_path, TEXT_TESTS)
    (repo / "calc" / "ops.py").write_text(OPS)
    out = tmp_path / "suite"
    report = generate(repo, "python -m pytest -q", out, max_tasks=3, seed=0, workers=2, progress=False)
    assert report.tests == 6 and not report.excluded_tests["count"]
    assert report.valid >= 1, report.invalid_reasons
    assert not report.invalid_reasons, report.invalid_reasons
    ids = set()
    for task in load_suite(out).tasks:
        ids |= set(task.check.tests)
        raw = yaml.safe_load((out / "tasks" / "generated" / f"{task.id}.yaml").read_text(encoding="utf-8"))
        assert raw["check"]["tests"] == task.check.tests
    assert any("\\xe9" in i or "\\n" in i or "\\u2603" in i for i in ids), ids

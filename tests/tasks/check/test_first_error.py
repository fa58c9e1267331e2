"""validate's first line of the real error (tasks.check.validate.first_error_line)."""
from __future__ import annotations

import pytest

from fixrl.tasks.check.validate import first_error_line

COLLECTION = """ImportError while importing test module '/workspace/tests/test_utils.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
tests/test_utils.py:6: in <module>
    from dateutil import tz
E   ModuleNotFoundError: No module named 'six'
"""


@pytest.mark.parametrize("output,first", [
    (COLLECTION, "ModuleNotFoundError: No module named 'six'"),
    ("INTERNALERROR> importlib.metadata.PackageNotFoundError: No package metadata was found for pluggy\n",
     "importlib.metadata.PackageNotFoundError: No package metadata was found for pluggy"),
    ("E   assert 1 == 2\nE   AssertionError: nope\n_ ERROR collecting tests/test_x.py _\n", "ERROR collecting tests/test_x.py _"),
    ("ERROR: usage: pytest [options]\npytest: error: unrecognized arguments: --cov\n",
     "error: unrecognized arguments: --cov"),
    ("1 passed in 0.01s\n", None),
])
def test_the_first_real_error_line(output, first):
    assert first_error_line(output) == first

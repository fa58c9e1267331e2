from collections import OrderedDict
from datetime import date, timedelta
from decimal import Decimal
from fractions import Fraction
from pathlib import PurePosixPath

import pytest
from ledger.plan import Slot, Status, plan, receipt_path


def test_plan_days_and_shares():
    assert plan(date(2024, 1, 1), 2) == [Slot(date(2024, 1, 1), Fraction(1, 2), Status.OPEN),
                                         Slot(date(2024, 1, 2), Fraction(1, 2), Status.OPEN)]


def test_plan_values_compare_as_they_really_do():
    slots = plan(date(2024, 3, 1), 4)
    assert slots[-1].day - slots[0].day == timedelta(days=3)
    assert sum(s.share for s in slots) == 1
    assert slots[0].share == Decimal("0.25")
    assert slots[0].share == pytest.approx(0.25)
    assert Status.OPEN in {s.status for s in slots}
    assert OrderedDict((s.day, s.share) for s in slots[:1]) == OrderedDict([(date(2024, 3, 1), Fraction(1, 4))])
    assert (date(2024, 3, 1), Fraction(1, 4), Status.OPEN) == tuple(slots[0])


def test_receipt_path():
    assert receipt_path(date(2024, 1, 2)) == PurePosixPath("receipts/2024-01-02.txt")
    assert receipt_path(date(2024, 1, 2)) != PurePosixPath("receipts/2024-01-03.txt")

"""Payment plans: equal shares of an amount on consecutive days."""
import enum
from collections import namedtuple
from datetime import timedelta
from fractions import Fraction
from pathlib import PurePosixPath


class Status(enum.Enum):
    OPEN = "open"
    PAID = "paid"


Slot = namedtuple("Slot", "day share status")


def plan(start, n):
    """n slots from `start` (a date), one a day, each an equal Fraction of the whole, open."""
    return [Slot(start + timedelta(days=i + 1), Fraction(1, n), Status.OPEN) for i in range(n)]


def receipt_path(day):
    return PurePosixPath("receipts") / f"{day.isoformat()}.txt"

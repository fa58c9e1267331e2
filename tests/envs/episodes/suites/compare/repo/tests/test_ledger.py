from datetime import date

from ledger.match import matches, pairs
from ledger.money import Money, total
from ledger.plan import plan


def test_total():
    assert total(["1", "2"]) == Money(3)


def test_pairs():
    assert pairs([1, 2, 3]) == [(1, 2), (2, 3)]


def test_matches():
    assert matches([1, 2], [1, 2])


def test_plan_starts_on_the_day():
    assert plan(date(2024, 1, 1), 1)[0].day == date(2024, 1, 1)

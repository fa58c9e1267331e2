from ledger.money import Money, total


def test_total_adds_every_price():
    assert total(["1.50", "2.25"]) == Money("3.75")


def test_total_of_one_price():
    assert total(["4"], "USD") == Money(4, "USD")
    assert total(["4"], "USD") != Money(4, "EUR")


def test_total_is_in_a_set_of_amounts():
    assert total(["1", "1"]) in {Money(2), Money(3)}

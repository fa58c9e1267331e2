from shop.basket import Basket
from shop.rates import convert, rate


def test_rate_usd():
    assert rate("usd") == 1.25


def test_convert():
    assert convert(10, "GBP") == 8.0


def test_total():
    assert Basket().add("pen", 2.0, 3).total() == 6.0


def test_len():
    assert len(Basket().add("a", 1.0)) == 1

from shop.basket import Basket


def test_total_counts_quantities():
    assert Basket().add("pen", 2.0, 3).add("ink", 1.5).total() == 7.5


def test_empty_total():
    assert Basket().total() == 0


def test_baskets_compare():
    assert Basket().add("a", 1.0) == Basket().add("a", 1.0)

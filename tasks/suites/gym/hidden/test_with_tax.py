from gym.numbers import with_tax


def test_with_tax_0():
    assert with_tax(100, 0.5) == 150.0


def test_with_tax_1():
    assert with_tax(10, 0) == 10


def test_with_tax_2():
    assert with_tax(8, 0.25) == 10.0

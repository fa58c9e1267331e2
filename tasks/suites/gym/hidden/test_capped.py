from gym.numbers import capped


def test_capped_0():
    assert capped(2, 3, 5) == 0


def test_capped_1():
    assert capped(1, 1, 5) == 2


def test_capped_2():
    assert capped(4, 4, 3) == 0


def test_capped_3():
    assert capped(0, 0, 9) == 1

from gym.numbers import bigger_double


def test_bigger_double_0():
    assert bigger_double(2, 7) == 15


def test_bigger_double_1():
    assert bigger_double(9, 1) == 19


def test_bigger_double_2():
    assert bigger_double(-4, -2) == -3

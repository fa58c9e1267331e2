from gym.numbers import twice_bigger


def test_twice_bigger_0():
    assert twice_bigger(2, 7) == 14


def test_twice_bigger_1():
    assert twice_bigger(9, 1) == 18


def test_twice_bigger_2():
    assert twice_bigger(-4, -2) == -4

from gym.library import sum_chips


def test_sum_chips_0():
    assert sum_chips([5, 4, -2], 4) == 13


def test_sum_chips_1():
    assert sum_chips([], -1) == -1


def test_sum_chips_2():
    assert sum_chips([2, 1, 0], 6) == 6


def test_sum_chips_3():
    assert sum_chips([], 5) == 5


def test_sum_chips_4():
    assert sum_chips([-2, 2, -1, 0], -1) == 1

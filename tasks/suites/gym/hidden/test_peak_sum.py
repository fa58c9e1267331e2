from gym.numbers import peak_sum


def test_peak_sum_0():
    assert peak_sum(1, 5, 3) == 8


def test_peak_sum_1():
    assert peak_sum(9, 2, 4) == 13


def test_peak_sum_2():
    assert peak_sum(-1, -7, 0) == -1

from gym.numbers import peak


def test_peak_0():
    assert peak(1, 5, 3) == 5


def test_peak_1():
    assert peak(9, 2, 4) == 9


def test_peak_2():
    assert peak(-1, -7, -3) == -1


def test_peak_3():
    assert peak(2, 2, 8) == 8

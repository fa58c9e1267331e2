from gym.numbers import plus


def test_plus_0():
    assert plus(2, 3) == 5


def test_plus_1():
    assert plus(-1, 1) == 0


def test_plus_2():
    assert plus(10, 0) == 10


def test_plus_3():
    assert plus(4, 4) == 8

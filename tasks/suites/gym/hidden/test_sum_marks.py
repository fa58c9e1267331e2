from gym.quarry import sum_marks


def test_sum_marks_0():
    assert sum_marks(6, 2, 6) == 6


def test_sum_marks_1():
    assert sum_marks(2, 0, 4) == 6


def test_sum_marks_2():
    assert sum_marks(0, 0, 3) == 3


def test_sum_marks_3():
    assert sum_marks(2, 6, 4) == 4


def test_sum_marks_4():
    assert sum_marks(6, 1, 4) == 4

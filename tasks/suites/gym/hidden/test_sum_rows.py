from gym.castle import sum_rows


def test_sum_rows_0():
    assert sum_rows(1, 5, 1) == 6


def test_sum_rows_1():
    assert sum_rows(0, 4, 4) == 8


def test_sum_rows_2():
    assert sum_rows(0, -1, 2) == 2


def test_sum_rows_3():
    assert sum_rows(5, 5, -1) == 4


def test_sum_rows_4():
    assert sum_rows(4, 5, 1) == 6

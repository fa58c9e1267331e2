from gym.kitchen import count_rows


def test_count_rows_0():
    assert count_rows([1, 5, 6, 0], 4) == 30


def test_count_rows_1():
    assert count_rows([3, 5, 3, 4], 4) == 26


def test_count_rows_2():
    assert count_rows([5], -1) == 8


def test_count_rows_3():
    assert count_rows([-1, 6, 3, -2], 0) == 18


def test_count_rows_4():
    assert count_rows([], 5) == 10

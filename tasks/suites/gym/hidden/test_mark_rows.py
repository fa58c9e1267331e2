from gym.cellar import mark_rows


def test_mark_rows_0():
    assert mark_rows(2, 4) == 3


def test_mark_rows_1():
    assert mark_rows(4, 1) == 0


def test_mark_rows_2():
    assert mark_rows(5, 0) == 0


def test_mark_rows_3():
    assert mark_rows(3, 5) == 6


def test_mark_rows_4():
    assert mark_rows(-1, 2) == 0

from gym.garden import score_rows


def test_score_rows_0():
    assert score_rows(1, 2, 3) == 4


def test_score_rows_1():
    assert score_rows(6, 5, 6) == 10


def test_score_rows_2():
    assert score_rows(5, -1, 1) == -2


def test_score_rows_3():
    assert score_rows(4, -1, -1) == -2


def test_score_rows_4():
    assert score_rows(6, 5, 1) == 10

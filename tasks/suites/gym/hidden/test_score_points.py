from gym.harbor import score_points


def test_score_points_0():
    assert score_points([2, 6], 5) == 7


def test_score_points_1():
    assert score_points([-1, 0, 4, 1], 2) == 7


def test_score_points_2():
    assert score_points([5, 3], 2) == 9


def test_score_points_3():
    assert score_points([], 3) == 1


def test_score_points_4():
    assert score_points([-1, -2, 5, 5], 6) == 13

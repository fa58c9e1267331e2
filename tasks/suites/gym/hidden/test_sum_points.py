from gym.theater import sum_points


def test_sum_points_0():
    assert sum_points(4, 0, 4) == 8


def test_sum_points_1():
    assert sum_points(-1, 5, 5) == 10


def test_sum_points_2():
    assert sum_points(5, 4, 0) == 5


def test_sum_points_3():
    assert sum_points(1, 6, 5) == 11


def test_sum_points_4():
    assert sum_points(4, 3, 1) == 5

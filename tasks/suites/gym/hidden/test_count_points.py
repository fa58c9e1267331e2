from gym.station import count_points


def test_count_points_0():
    assert count_points(2, 0) == [0, 0, 0, 0]


def test_count_points_1():
    assert count_points(3, -1) == [0, -1, -2, -3, -1]


def test_count_points_2():
    assert count_points(1, 6) == [6]


def test_count_points_3():
    assert count_points(-1, 0) == [0]


def test_count_points_4():
    assert count_points(-1, 3) == [3]

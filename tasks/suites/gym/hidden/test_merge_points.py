from gym.market import merge_points


def test_merge_points_0():
    assert merge_points([0, 0], 5) == 0


def test_merge_points_1():
    assert merge_points([-1, 3, -1], 0) == 6


def test_merge_points_2():
    assert merge_points([1, -1], 1) == 2


def test_merge_points_3():
    assert merge_points([5], 5) == 2


def test_merge_points_4():
    assert merge_points([-2], 3) == 0

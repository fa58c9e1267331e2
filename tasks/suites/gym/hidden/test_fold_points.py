from gym.forest import fold_points


def test_fold_points_0():
    assert fold_points([4], 6) == 0


def test_fold_points_1():
    assert fold_points([0, 4, 6], 5) == 10


def test_fold_points_2():
    assert fold_points([-2, 5, 6, 4], 3) == 15


def test_fold_points_3():
    assert fold_points([], 6) == 0


def test_fold_points_4():
    assert fold_points([5], 2) == 5

from gym.scores import add_points


def test_add_points_0():
    assert add_points((1, 2), (3, 4)) == (3, 6)


def test_add_points_1():
    assert add_points((5, 0), (0, 6)) == (5, 6)


def test_add_points_2():
    assert add_points((-1, 1), (1, -1)) == (1, 0)

from gym.scores import add_points


def test_add_points_0():
    assert add_points((1, 2), (3, 4)) == (4, 6)


def test_add_points_1():
    assert add_points((0, 0), (5, 6)) == (5, 6)


def test_add_points_2():
    assert add_points((-1, 1), (1, -1)) == (0, 0)

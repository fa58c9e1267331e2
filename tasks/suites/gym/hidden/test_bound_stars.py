from gym.forest import bound_stars


def test_bound_stars_0():
    assert bound_stars(4, 6, -1) == 12


def test_bound_stars_1():
    assert bound_stars(6, -1, 5) == -2


def test_bound_stars_2():
    assert bound_stars(0, 2, 4) == 3


def test_bound_stars_3():
    assert bound_stars(2, 1, 6) == 2


def test_bound_stars_4():
    assert bound_stars(5, 0, 4) == 0

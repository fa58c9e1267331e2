from gym.island import grow_stars


def test_grow_stars_0():
    assert grow_stars(4, 2) == [2, 2, 2, 3, 4]


def test_grow_stars_1():
    assert grow_stars(0, 2) == [2]


def test_grow_stars_2():
    assert grow_stars(5, 3) == [3, 3, 3, 3, 4, 5]


def test_grow_stars_3():
    assert grow_stars(1, -1) == [0, 1]


def test_grow_stars_4():
    assert grow_stars(5, 4) == [4, 4, 4, 4, 4, 5]

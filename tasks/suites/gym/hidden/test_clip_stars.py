from gym.bakery import clip_stars


def test_clip_stars_0():
    assert clip_stars([0], 5) == 0


def test_clip_stars_1():
    assert clip_stars([1, 5], 2) == 4


def test_clip_stars_2():
    assert clip_stars([-1, 2, 2], 5) == 0


def test_clip_stars_3():
    assert clip_stars([], 5) == 0


def test_clip_stars_4():
    assert clip_stars([-1, -1], 1) == 0

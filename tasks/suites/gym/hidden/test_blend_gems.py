from gym.garden import blend_gems


def test_blend_gems_0():
    assert blend_gems(-1, 1, 6) == 0


def test_blend_gems_1():
    assert blend_gems(3, 6, 0) == 6


def test_blend_gems_2():
    assert blend_gems(-1, 5, 5) == 0


def test_blend_gems_3():
    assert blend_gems(0, 3, 1) == 0


def test_blend_gems_4():
    assert blend_gems(6, 6, -1) == 5

from gym.museum import blend_pegs


def test_blend_pegs_0():
    assert blend_pegs([4, -2], -1) == 8


def test_blend_pegs_1():
    assert blend_pegs([6, 1, 1, 6], 1) == 28


def test_blend_pegs_2():
    assert blend_pegs([6], 0) == 12


def test_blend_pegs_3():
    assert blend_pegs([-2, 0, 3, 3], 2) == 12


def test_blend_pegs_4():
    assert blend_pegs([], 2) == 0

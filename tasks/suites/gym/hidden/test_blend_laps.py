from gym.quarry import blend_laps


def test_blend_laps_0():
    assert blend_laps(0, 2, 1) == 3


def test_blend_laps_1():
    assert blend_laps(3, 3, -1) == -1


def test_blend_laps_2():
    assert blend_laps(6, -1, 4) == 4


def test_blend_laps_3():
    assert blend_laps(1, 0, 0) == 0


def test_blend_laps_4():
    assert blend_laps(4, 3, 1) == 1

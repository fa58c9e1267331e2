from gym.station import clip_chips


def test_clip_chips_0():
    assert clip_chips(0, 4, 5) == 5


def test_clip_chips_1():
    assert clip_chips(0, 1, -1) == -1


def test_clip_chips_2():
    assert clip_chips(2, 3, 5) == 4


def test_clip_chips_3():
    assert clip_chips(4, 1, 0) == 0


def test_clip_chips_4():
    assert clip_chips(4, 2, -1) == -1

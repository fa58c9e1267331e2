from gym.garden import clip_laps


def test_clip_laps_0():
    assert clip_laps(4, 5) == 5


def test_clip_laps_1():
    assert clip_laps(2, 1) == 6


def test_clip_laps_2():
    assert clip_laps(-1, 0) == 0


def test_clip_laps_3():
    assert clip_laps(1, 2) == 2


def test_clip_laps_4():
    assert clip_laps(2, 0) == 3

from gym.forest import mark_laps


def test_mark_laps_0():
    assert mark_laps(-1, 5, 5) == 10


def test_mark_laps_1():
    assert mark_laps(3, -1, 5) == 0


def test_mark_laps_2():
    assert mark_laps(0, -1, 0) == 0


def test_mark_laps_3():
    assert mark_laps(-1, 3, -1) == 2


def test_mark_laps_4():
    assert mark_laps(-1, 5, 1) == 6

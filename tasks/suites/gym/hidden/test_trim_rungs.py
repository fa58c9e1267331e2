from gym.harbor import trim_rungs


def test_trim_rungs_0():
    assert trim_rungs([-2, 0, 3, 3], 3) == 9


def test_trim_rungs_1():
    assert trim_rungs([0, 3, -2], 6) == 9


def test_trim_rungs_2():
    assert trim_rungs([3, 5], 5) == 13


def test_trim_rungs_3():
    assert trim_rungs([4, 0, -2, 0], -1) == 3


def test_trim_rungs_4():
    assert trim_rungs([1, -1], 5) == 5

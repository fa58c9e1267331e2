from gym.harbor import mark_rungs


def test_mark_rungs_0():
    assert mark_rungs(2, 6) == 18


def test_mark_rungs_1():
    assert mark_rungs(5, 1) == 7


def test_mark_rungs_2():
    assert mark_rungs(4, 3) == 21


def test_mark_rungs_3():
    assert mark_rungs(1, 4) == 4


def test_mark_rungs_4():
    assert mark_rungs(5, 5) == 35

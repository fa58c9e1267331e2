from gym.museum import grow_rungs


def test_grow_rungs_0():
    assert grow_rungs(5, 0, 2) == 7


def test_grow_rungs_1():
    assert grow_rungs(4, 0, 4) == 8


def test_grow_rungs_2():
    assert grow_rungs(1, 2, 4) == 0


def test_grow_rungs_3():
    assert grow_rungs(3, -1, 5) == 0


def test_grow_rungs_4():
    assert grow_rungs(2, 3, 4) == 0

from gym.island import bound_gems


def test_bound_gems_0():
    assert bound_gems(0, 2, 0) == 0


def test_bound_gems_1():
    assert bound_gems(5, -1, 5) == 5


def test_bound_gems_2():
    assert bound_gems(3, 2, 1) == 3


def test_bound_gems_3():
    assert bound_gems(0, 4, 2) == 2


def test_bound_gems_4():
    assert bound_gems(2, 5, 1) == 2

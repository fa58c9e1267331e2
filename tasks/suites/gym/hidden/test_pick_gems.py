from gym.castle import pick_gems


def test_pick_gems_0():
    assert pick_gems(2, 5) == 3


def test_pick_gems_1():
    assert pick_gems(4, 6) == 6


def test_pick_gems_2():
    assert pick_gems(5, 3) == 3


def test_pick_gems_3():
    assert pick_gems(2, 0) == 0


def test_pick_gems_4():
    assert pick_gems(0, 3) == 0

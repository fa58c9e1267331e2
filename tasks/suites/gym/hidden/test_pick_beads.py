from gym.kitchen import pick_beads


def test_pick_beads_0():
    assert pick_beads([-2, -2], 5) == 11


def test_pick_beads_1():
    assert pick_beads([-1], 5) == 9


def test_pick_beads_2():
    assert pick_beads([4, 6, 1, -2], 1) == 14


def test_pick_beads_3():
    assert pick_beads([5, 2, 4, 6], 0) == 17


def test_pick_beads_4():
    assert pick_beads([], 6) == 6

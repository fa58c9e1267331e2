from gym.station import mark_beads


def test_mark_beads_0():
    assert mark_beads(1, 5) == 1


def test_mark_beads_1():
    assert mark_beads(3, 2) == 1


def test_mark_beads_2():
    assert mark_beads(2, 0) == 0


def test_mark_beads_3():
    assert mark_beads(6, 5) == 6


def test_mark_beads_4():
    assert mark_beads(-1, 5) == 0

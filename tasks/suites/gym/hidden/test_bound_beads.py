from gym.station import bound_beads


def test_bound_beads_0():
    assert bound_beads(3, -1, 5) == 5


def test_bound_beads_1():
    assert bound_beads(-1, 4, 3) == 8


def test_bound_beads_2():
    assert bound_beads(2, 1, -1) == 2


def test_bound_beads_3():
    assert bound_beads(-1, 6, 3) == 12


def test_bound_beads_4():
    assert bound_beads(6, 1, -1) == 2

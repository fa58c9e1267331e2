from gym.market import sum_beads


def test_sum_beads_0():
    assert sum_beads(4, 6) == 24


def test_sum_beads_1():
    assert sum_beads(3, 1) == 4


def test_sum_beads_2():
    assert sum_beads(6, 5) == 26


def test_sum_beads_3():
    assert sum_beads(-1, 0) == 0


def test_sum_beads_4():
    assert sum_beads(4, 2) == 10

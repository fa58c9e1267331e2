from gym.canyon import tally_beads


def test_tally_beads_0():
    assert tally_beads(2, 1) == 0


def test_tally_beads_1():
    assert tally_beads(2, 4) == 3


def test_tally_beads_2():
    assert tally_beads(5, 3) == 3


def test_tally_beads_3():
    assert tally_beads(6, 5) == 6


def test_tally_beads_4():
    assert tally_beads(6, 3) == 3

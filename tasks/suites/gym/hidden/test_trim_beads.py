from gym.village import trim_beads


def test_trim_beads_0():
    assert trim_beads(2, 2) == 4


def test_trim_beads_1():
    assert trim_beads(1, 6) == 6


def test_trim_beads_2():
    assert trim_beads(5, 1) == 5


def test_trim_beads_3():
    assert trim_beads(0, 3) == 3


def test_trim_beads_4():
    assert trim_beads(5, 4) == 16

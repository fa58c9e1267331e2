from gym.cellar import lift_beads


def test_lift_beads_0():
    assert lift_beads(5, 1) == 0


def test_lift_beads_1():
    assert lift_beads(2, 4) == 3


def test_lift_beads_2():
    assert lift_beads(-1, 3) == 0


def test_lift_beads_3():
    assert lift_beads(-1, 5) == 0


def test_lift_beads_4():
    assert lift_beads(5, -1) == 0

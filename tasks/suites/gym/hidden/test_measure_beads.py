from gym.orchard import measure_beads


def test_measure_beads_0():
    assert measure_beads(1, 0) == [1, 1]


def test_measure_beads_1():
    assert measure_beads(-1, 4) == []


def test_measure_beads_2():
    assert measure_beads(3, 2) == [1, 1, 1]


def test_measure_beads_3():
    assert measure_beads(0, -1) == [1]


def test_measure_beads_4():
    assert measure_beads(2, 1) == [1, 1]

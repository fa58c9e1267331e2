from gym.ranges import weighted_total


def test_weighted_total_0():
    assert weighted_total(3) == 7


def test_weighted_total_1():
    assert weighted_total(0) == 1


def test_weighted_total_2():
    assert weighted_total(5) == 16

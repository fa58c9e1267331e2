from gym.theater import lift_rungs


def test_lift_rungs_0():
    assert lift_rungs([6, 1, -2], 6) == 1


def test_lift_rungs_1():
    assert lift_rungs([-1, 1, -1], 2) == 1


def test_lift_rungs_2():
    assert lift_rungs([1], 4) == 0


def test_lift_rungs_3():
    assert lift_rungs([-2, 2], 3) == 1


def test_lift_rungs_4():
    assert lift_rungs([], 4) == 0

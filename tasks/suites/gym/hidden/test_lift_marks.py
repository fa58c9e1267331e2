from gym.quarry import lift_marks


def test_lift_marks_0():
    assert lift_marks(2, 1) == 2


def test_lift_marks_1():
    assert lift_marks(3, 2) == 3


def test_lift_marks_2():
    assert lift_marks(-1, -1) == 0


def test_lift_marks_3():
    assert lift_marks(5, 0) == 6


def test_lift_marks_4():
    assert lift_marks(4, 2) == 4

from gym.market import pick_marks


def test_pick_marks_0():
    assert pick_marks([5], 1) == 2


def test_pick_marks_1():
    assert pick_marks([3, 2], 3) == 2


def test_pick_marks_2():
    assert pick_marks([6, 2, -2, 0], 4) == 2


def test_pick_marks_3():
    assert pick_marks([-2], 6) == 0


def test_pick_marks_4():
    assert pick_marks([4], 4) == 2

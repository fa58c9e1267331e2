from gym.theater import merge_marks


def test_merge_marks_0():
    assert merge_marks(0, 2) == 0


def test_merge_marks_1():
    assert merge_marks(3, 6) == 3


def test_merge_marks_2():
    assert merge_marks(0, 0) == 0


def test_merge_marks_3():
    assert merge_marks(-1, 1) == 0


def test_merge_marks_4():
    assert merge_marks(1, 3) == 0

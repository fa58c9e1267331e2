from gym.canyon import count_marks


def test_count_marks_0():
    assert count_marks([6, 0, -2], -1) == 3


def test_count_marks_1():
    assert count_marks([0, -2, 1], 5) == 5


def test_count_marks_2():
    assert count_marks([5], -1) == 1


def test_count_marks_3():
    assert count_marks([6, 6, -1], 3) == 3


def test_count_marks_4():
    assert count_marks([-2, 3, 5], -1) == 3

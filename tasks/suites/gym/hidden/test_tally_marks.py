from gym.canyon import tally_marks


def test_tally_marks_0():
    assert tally_marks(5, 3) == 1


def test_tally_marks_1():
    assert tally_marks(2, 4) == 3


def test_tally_marks_2():
    assert tally_marks(0, 3) == 0


def test_tally_marks_3():
    assert tally_marks(5, -1) == 0


def test_tally_marks_4():
    assert tally_marks(6, 2) == 1

from gym.orchard import rank_notes


def test_rank_notes_0():
    assert rank_notes(2, 6, -1) == 12


def test_rank_notes_1():
    assert rank_notes(2, 0, 2) == 0


def test_rank_notes_2():
    assert rank_notes(5, 4, 2) == 8


def test_rank_notes_3():
    assert rank_notes(4, 3, 1) == 6


def test_rank_notes_4():
    assert rank_notes(1, 3, 2) == 6

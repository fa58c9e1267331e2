from gym.theater import tally_notes


def test_tally_notes_0():
    assert tally_notes(6, 2) == 1


def test_tally_notes_1():
    assert tally_notes(3, 5) == 6


def test_tally_notes_2():
    assert tally_notes(5, 6) == 6


def test_tally_notes_3():
    assert tally_notes(-1, 4) == 0


def test_tally_notes_4():
    assert tally_notes(6, 4) == 6

from gym.harbor import sum_notes


def test_sum_notes_0():
    assert sum_notes(2, 1) == 4


def test_sum_notes_1():
    assert sum_notes(3, 2) == 4


def test_sum_notes_2():
    assert sum_notes(0, 5) == 5


def test_sum_notes_3():
    assert sum_notes(6, 4) == 56


def test_sum_notes_4():
    assert sum_notes(5, 1) == 20

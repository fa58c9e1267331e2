from gym.castle import merge_notes


def test_merge_notes_0():
    assert merge_notes(4, 4, 4) == 4


def test_merge_notes_1():
    assert merge_notes(-1, -1, 4) == 1


def test_merge_notes_2():
    assert merge_notes(0, -1, -1) == -1


def test_merge_notes_3():
    assert merge_notes(3, 2, 2) == 2


def test_merge_notes_4():
    assert merge_notes(1, 1, 0) == 0

from gym.bakery import grow_notes


def test_grow_notes_0():
    assert grow_notes(5, 1) == 0


def test_grow_notes_1():
    assert grow_notes(1, 6) == 1


def test_grow_notes_2():
    assert grow_notes(6, 1) == 0


def test_grow_notes_3():
    assert grow_notes(4, 6) == 3


def test_grow_notes_4():
    assert grow_notes(1, 0) == 0

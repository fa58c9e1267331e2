from gym.quarry import mark_pages


def test_mark_pages_0():
    assert mark_pages([0, 5, -1, -1], 6) == 12


def test_mark_pages_1():
    assert mark_pages([3], 6) == 10


def test_mark_pages_2():
    assert mark_pages([6], 4) == 11


def test_mark_pages_3():
    assert mark_pages([6, 3, 6, 4], 0) == 20


def test_mark_pages_4():
    assert mark_pages([4], 6) == 11

from gym.canyon import pick_pages


def test_pick_pages_0():
    assert pick_pages(3, 5, 5) == 5


def test_pick_pages_1():
    assert pick_pages(1, -1, 3) == 4


def test_pick_pages_2():
    assert pick_pages(3, 4, 1) == 5


def test_pick_pages_3():
    assert pick_pages(3, 2, 0) == 3


def test_pick_pages_4():
    assert pick_pages(4, 6, 0) == 6

from gym.meadow import merge_pages


def test_merge_pages_0():
    assert merge_pages(-1, -1) == []


def test_merge_pages_1():
    assert merge_pages(6, 6) == [9, 10, 11, 12]


def test_merge_pages_2():
    assert merge_pages(0, -1) == [-1]


def test_merge_pages_3():
    assert merge_pages(1, 6) == []


def test_merge_pages_4():
    assert merge_pages(1, 3) == []

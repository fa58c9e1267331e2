from gym.lists import keep_big


def test_keep_big_0():
    assert keep_big([1, 2, 3, 4], 2) == [3, 4]


def test_keep_big_1():
    assert keep_big([5, 6, 1], 5) == [6]


def test_keep_big_2():
    assert keep_big([0, 9], 0) == [9]

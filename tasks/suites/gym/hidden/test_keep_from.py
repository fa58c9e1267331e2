from gym.lists import keep_from


def test_keep_from_0():
    assert keep_from([1, 2, 3, 4], 3) == [3, 4]


def test_keep_from_1():
    assert keep_from([5, 5, 1], 5) == [5, 5]


def test_keep_from_2():
    assert keep_from([0, 9], 1) == [9]

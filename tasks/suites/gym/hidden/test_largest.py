from gym.lists import largest


def test_largest_0():
    assert largest([3, 8, 1]) == 8


def test_largest_1():
    assert largest([5, 2, 9, 4]) == 9


def test_largest_2():
    assert largest([-3, -1, -2]) == -1

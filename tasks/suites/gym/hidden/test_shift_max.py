from gym.lists import shift_max


def test_shift_max_0():
    assert shift_max([1, -5, 2], 3) == [4, 0, 5]


def test_shift_max_1():
    assert shift_max([0, 4], 1) == [1, 5]


def test_shift_max_2():
    assert shift_max([], 2) == []

from gym.lists import shift_all


def test_shift_all_0():
    assert shift_all([1, 2], 3) == [4, 5]


def test_shift_all_1():
    assert shift_all([], 5) == []


def test_shift_all_2():
    assert shift_all([0, -2], 2) == [2, 0]

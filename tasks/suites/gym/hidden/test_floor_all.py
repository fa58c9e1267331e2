from gym.lists import floor_all


def test_floor_all_0():
    assert floor_all([1, 5, 0], 2) == [2, 5, 2]


def test_floor_all_1():
    assert floor_all([3, 7], 4) == [4, 7]


def test_floor_all_2():
    assert floor_all([-5, 1], 0) == [1]

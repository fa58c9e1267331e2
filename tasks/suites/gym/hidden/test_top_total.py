from gym.lists import top_total


def test_top_total_0():
    assert top_total([1, 2, 3, 4], 3) == 7


def test_top_total_1():
    assert top_total([5, 5, 1], 5) == 10


def test_top_total_2():
    assert top_total([], 1) == 0


def test_top_total_3():
    assert top_total([0, 9], 1) == 9

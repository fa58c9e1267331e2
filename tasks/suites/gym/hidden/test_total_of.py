from gym.lists import total_of


def test_total_of_0():
    assert total_of([1, 2, 3]) == 6


def test_total_of_1():
    assert total_of([10, 4]) == 14


def test_total_of_2():
    assert total_of([]) == 0

from gym.scores import sum_squares


def test_sum_squares_0():
    assert sum_squares([1, -2, 3]) == 10


def test_sum_squares_1():
    assert sum_squares([]) == 0


def test_sum_squares_2():
    assert sum_squares([4]) == 16

from gym.lists import squares_upto


def test_squares_upto_0():
    assert squares_upto(3) == [1, 2, 5, 10]


def test_squares_upto_1():
    assert squares_upto(0) == [1]


def test_squares_upto_2():
    assert squares_upto(5) == [1, 2, 5, 10, 17, 26]

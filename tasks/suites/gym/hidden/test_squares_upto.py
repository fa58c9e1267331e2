from gym.lists import squares_upto


def test_squares_upto_0():
    assert squares_upto(3) == [0, 1, 4, 9]


def test_squares_upto_1():
    assert squares_upto(0) == [0]


def test_squares_upto_2():
    assert squares_upto(5) == [0, 1, 4, 9, 16, 25]

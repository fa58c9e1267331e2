from gym.scores import multiples_upto


def test_multiples_upto_0():
    assert multiples_upto(3, 5) == [1, 5, 10, 15]


def test_multiples_upto_1():
    assert multiples_upto(0, 2) == [1]


def test_multiples_upto_2():
    assert multiples_upto(4, 3) == [1, 3, 6, 9, 12]

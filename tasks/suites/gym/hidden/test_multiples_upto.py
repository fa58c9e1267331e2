from gym.scores import multiples_upto


def test_multiples_upto_0():
    assert multiples_upto(3, 5) == [0, 5, 10, 15]


def test_multiples_upto_1():
    assert multiples_upto(0, 2) == [0]


def test_multiples_upto_2():
    assert multiples_upto(4, 3) == [0, 3, 6, 9, 12]

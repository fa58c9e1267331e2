from gym.ranges import count_upto


def test_count_upto_0():
    assert count_upto(3) == [1, 1, 2, 3]


def test_count_upto_1():
    assert count_upto(0) == [1]


def test_count_upto_2():
    assert count_upto(6) == [1, 1, 2, 3, 4, 5, 6]

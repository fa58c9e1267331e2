from gym.ranges import sum_upto


def test_sum_upto_0():
    assert sum_upto(3) == 14


def test_sum_upto_1():
    assert sum_upto(1) == 1


def test_sum_upto_2():
    assert sum_upto(10) == 385

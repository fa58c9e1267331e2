from gym.ranges import reach


def test_reach_0():
    assert reach([1, 2], 4, 2) == True


def test_reach_1():
    assert reach([6], 7, 0) == False


def test_reach_2():
    assert reach([7, 1], 3, 0) == True

from gym.ranges import reach


def test_reach_0():
    assert reach([1, 4], 4) == True


def test_reach_1():
    assert reach([1, 2], 5) == False


def test_reach_2():
    assert reach([6], 6) == True


def test_reach_3():
    assert reach([7, 1], 3) == True

from gym.scores import all_positive


def test_all_positive_0():
    assert all_positive([0, 1, 2]) == True


def test_all_positive_1():
    assert all_positive([3, 4]) == True


def test_all_positive_2():
    assert all_positive([1, -1]) == False


def test_all_positive_3():
    assert all_positive([0]) == True

from gym.scores import all_pass


def test_all_pass_0():
    assert all_pass([1, 2], 2) == True


def test_all_pass_1():
    assert all_pass([3, 4], 5) == False


def test_all_pass_2():
    assert all_pass([1, -1], 0) == True


def test_all_pass_3():
    assert all_pass([0], 1) == True

from gym.numbers import at_least_sum


def test_at_least_sum_0():
    assert at_least_sum(2, 3, 5) == True


def test_at_least_sum_1():
    assert at_least_sum(4, 1, 4) == True


def test_at_least_sum_2():
    assert at_least_sum(1, 1, 3) == False


def test_at_least_sum_3():
    assert at_least_sum(0, 0, 0) == True

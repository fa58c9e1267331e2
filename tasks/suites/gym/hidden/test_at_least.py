from gym.numbers import at_least


def test_at_least_0():
    assert at_least(5, 5) == True


def test_at_least_1():
    assert at_least(7, 3) == True


def test_at_least_2():
    assert at_least(2, 3) == False


def test_at_least_3():
    assert at_least(0, 0) == True

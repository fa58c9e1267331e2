from gym.ranges import next_odd


def test_next_odd_0():
    assert next_odd(3) == 7


def test_next_odd_1():
    assert next_odd(-2) == 1


def test_next_odd_2():
    assert next_odd(10) == 21

from gym.ranges import values_total


def test_values_total_0():
    assert values_total({'a': 2, 'b': 3}, 3) == 3


def test_values_total_1():
    assert values_total({}, 0) == 0


def test_values_total_2():
    assert values_total({'x': 1}, 0) == 1

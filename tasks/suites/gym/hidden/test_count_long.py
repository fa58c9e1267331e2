from gym.strings import count_long


def test_count_long_0():
    assert count_long(['ab', 'abc', 'a'], 2) == 2


def test_count_long_1():
    assert count_long(['hello', 'hi'], 5) == 1


def test_count_long_2():
    assert count_long([], 1) == 0

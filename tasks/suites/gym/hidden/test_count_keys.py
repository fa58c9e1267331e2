from gym.market import count_keys


def test_count_keys_0():
    assert count_keys(1, 1) == 0


def test_count_keys_1():
    assert count_keys(2, 3) == 3


def test_count_keys_2():
    assert count_keys(-1, 6) == 0


def test_count_keys_3():
    assert count_keys(2, 1) == 0


def test_count_keys_4():
    assert count_keys(0, 6) == 0

from gym.library import merge_keys


def test_merge_keys_0():
    assert merge_keys(0, 4) == [0, 4]


def test_merge_keys_1():
    assert merge_keys(3, 3) == [0, 1, 4, 9, 3]


def test_merge_keys_2():
    assert merge_keys(6, 6) == [0, 1, 4, 9, 16, 25, 36, 6]


def test_merge_keys_3():
    assert merge_keys(0, 3) == [0, 3]


def test_merge_keys_4():
    assert merge_keys(4, 0) == [0, 1, 4, 9, 16, 0]

from gym.village import gather_keys


def test_gather_keys_0():
    assert gather_keys(6, 3) == 1


def test_gather_keys_1():
    assert gather_keys(2, 5) == 3


def test_gather_keys_2():
    assert gather_keys(0, 2) == 0


def test_gather_keys_3():
    assert gather_keys(0, -1) == 0


def test_gather_keys_4():
    assert gather_keys(-1, 0) == 0

from gym.island import score_keys


def test_score_keys_0():
    assert score_keys(4, 5, 0) == 20


def test_score_keys_1():
    assert score_keys(3, 3, 4) == 4


def test_score_keys_2():
    assert score_keys(4, 1, 5) == 5


def test_score_keys_3():
    assert score_keys(1, -1, 0) == 1


def test_score_keys_4():
    assert score_keys(2, 6, 0) == 12

from gym.scores import best_score


def test_best_score_0():
    assert best_score([4, 9, 2], 1) == 10


def test_best_score_1():
    assert best_score([1, 1, 7], 0) == 7


def test_best_score_2():
    assert best_score([-2, -8], 3) == 1

from gym.cellar import score_gems


def test_score_gems_0():
    assert score_gems(5, 6, 2) == 7


def test_score_gems_1():
    assert score_gems(1, 2, 3) == 4


def test_score_gems_2():
    assert score_gems(1, 0, 5) == 0


def test_score_gems_3():
    assert score_gems(5, 3, 4) == 9


def test_score_gems_4():
    assert score_gems(6, 2, 3) == 9

from gym.theater import rank_gems


def test_rank_gems_0():
    assert rank_gems([], 4) == 4


def test_rank_gems_1():
    assert rank_gems([5, 2, 0, -1], 0) == 4


def test_rank_gems_2():
    assert rank_gems([0, -1, 2, 4], 3) == 3


def test_rank_gems_3():
    assert rank_gems([0], 0) == 1


def test_rank_gems_4():
    assert rank_gems([1], 3) == 3

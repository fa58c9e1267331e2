from gym.village import rank_coins


def test_rank_coins_0():
    assert rank_coins(3, 1) == 7


def test_rank_coins_1():
    assert rank_coins(3, 2) == 8


def test_rank_coins_2():
    assert rank_coins(1, 6) == 6


def test_rank_coins_3():
    assert rank_coins(-1, 6) == 6


def test_rank_coins_4():
    assert rank_coins(4, 0) == 10

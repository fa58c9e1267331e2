from gym.tunnel import merge_coins


def test_merge_coins_0():
    assert merge_coins(2, 4) == 3


def test_merge_coins_1():
    assert merge_coins(4, 1) == 0


def test_merge_coins_2():
    assert merge_coins(6, 4) == 3


def test_merge_coins_3():
    assert merge_coins(4, 2) == 1


def test_merge_coins_4():
    assert merge_coins(-1, -1) == 0

from gym.valley import pick_coins


def test_pick_coins_0():
    assert pick_coins(6, 6, 6) == 12


def test_pick_coins_1():
    assert pick_coins(2, 4, -1) == 3


def test_pick_coins_2():
    assert pick_coins(6, -1, 4) == 10


def test_pick_coins_3():
    assert pick_coins(1, 3, 3) == 3


def test_pick_coins_4():
    assert pick_coins(-1, 1, -1) == 1

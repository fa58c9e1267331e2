from gym.meadow import count_coins


def test_count_coins_0():
    assert count_coins(1, 1, 6) == 2


def test_count_coins_1():
    assert count_coins(-1, 3, 2) == 2


def test_count_coins_2():
    assert count_coins(0, 1, -1) == 0


def test_count_coins_3():
    assert count_coins(1, 0, 0) == 1


def test_count_coins_4():
    assert count_coins(0, 0, 2) == 1

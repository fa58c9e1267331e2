from gym.tunnel import weigh_coins


def test_weigh_coins_0():
    assert weigh_coins(2, 4) == 0


def test_weigh_coins_1():
    assert weigh_coins(6, 5) == 122


def test_weigh_coins_2():
    assert weigh_coins(-1, 5) == 0


def test_weigh_coins_3():
    assert weigh_coins(2, -1) == 10


def test_weigh_coins_4():
    assert weigh_coins(3, 3) == 18

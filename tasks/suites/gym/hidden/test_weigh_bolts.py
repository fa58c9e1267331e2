from gym.island import weigh_bolts


def test_weigh_bolts_0():
    assert weigh_bolts(4, 5, 4) == 6


def test_weigh_bolts_1():
    assert weigh_bolts(-1, -1, 4) == -2


def test_weigh_bolts_2():
    assert weigh_bolts(4, 2, 3) == 4


def test_weigh_bolts_3():
    assert weigh_bolts(4, 2, 5) == 4


def test_weigh_bolts_4():
    assert weigh_bolts(4, 5, 5) == 6

from gym.bakery import rank_bolts


def test_rank_bolts_0():
    assert rank_bolts(5, 2) == 57


def test_rank_bolts_1():
    assert rank_bolts(0, 5) == 5


def test_rank_bolts_2():
    assert rank_bolts(-1, 0) == 0


def test_rank_bolts_3():
    assert rank_bolts(4, 4) == 34


def test_rank_bolts_4():
    assert rank_bolts(3, 1) == 15

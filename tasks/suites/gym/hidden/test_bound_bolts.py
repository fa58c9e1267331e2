from gym.forest import bound_bolts


def test_bound_bolts_0():
    assert bound_bolts(0, -1) == 0


def test_bound_bolts_1():
    assert bound_bolts(1, 2) == 1


def test_bound_bolts_2():
    assert bound_bolts(-1, 4) == 0


def test_bound_bolts_3():
    assert bound_bolts(0, 4) == 0


def test_bound_bolts_4():
    assert bound_bolts(-1, 2) == 0

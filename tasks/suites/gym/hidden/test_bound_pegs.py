from gym.museum import bound_pegs


def test_bound_pegs_0():
    assert bound_pegs(3, 2, 4) == 7


def test_bound_pegs_1():
    assert bound_pegs(1, 2, 1) == 3


def test_bound_pegs_2():
    assert bound_pegs(4, 3, 0) == 4


def test_bound_pegs_3():
    assert bound_pegs(5, 0, 5) == 10


def test_bound_pegs_4():
    assert bound_pegs(2, 3, 1) == 3

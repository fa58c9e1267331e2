from gym.village import gather_pegs


def test_gather_pegs_0():
    assert gather_pegs([6, 0, -2, -1], -1) == 8


def test_gather_pegs_1():
    assert gather_pegs([0, 1, 3], -1) == 8


def test_gather_pegs_2():
    assert gather_pegs([], 3) == 0


def test_gather_pegs_3():
    assert gather_pegs([2], 4) == 8


def test_gather_pegs_4():
    assert gather_pegs([-1, 4, -2], 3) == 20

from gym.cellar import measure_pegs


def test_measure_pegs_0():
    assert measure_pegs([4, 1], 0) == 5


def test_measure_pegs_1():
    assert measure_pegs([1, 5, 6], 2) == 18


def test_measure_pegs_2():
    assert measure_pegs([2, -2, 2, 4], 5) == 26


def test_measure_pegs_3():
    assert measure_pegs([2, -2], 2) == 4


def test_measure_pegs_4():
    assert measure_pegs([-2, 0], 6) == 10

from gym.kitchen import trim_pegs


def test_trim_pegs_0():
    assert trim_pegs(4, 0) == 10


def test_trim_pegs_1():
    assert trim_pegs(1, 2) == 5


def test_trim_pegs_2():
    assert trim_pegs(1, -1) == -2


def test_trim_pegs_3():
    assert trim_pegs(-1, -1) == -1


def test_trim_pegs_4():
    assert trim_pegs(5, 6) == 36

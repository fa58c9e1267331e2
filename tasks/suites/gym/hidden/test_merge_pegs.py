from gym.garden import merge_pegs


def test_merge_pegs_0():
    assert merge_pegs(6, 4) == 28


def test_merge_pegs_1():
    assert merge_pegs(2, 1) == 3


def test_merge_pegs_2():
    assert merge_pegs(3, 1) == 4


def test_merge_pegs_3():
    assert merge_pegs(0, 3) == 3


def test_merge_pegs_4():
    assert merge_pegs(1, 3) == 6

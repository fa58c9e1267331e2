from gym.orchard import fold_pegs


def test_fold_pegs_0():
    assert fold_pegs(3, 4) == [4, 9, 4]


def test_fold_pegs_1():
    assert fold_pegs(1, 6) == [6]


def test_fold_pegs_2():
    assert fold_pegs(4, 0) == [0, 1, 4, 9, 16, 0]


def test_fold_pegs_3():
    assert fold_pegs(0, 5) == [5]


def test_fold_pegs_4():
    assert fold_pegs(-1, -1) == [-1]

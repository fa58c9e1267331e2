from gym.museum import fold_beads


def test_fold_beads_0():
    assert fold_beads([4, 6], 1) == 3


def test_fold_beads_1():
    assert fold_beads([5, 2], 2) == 3


def test_fold_beads_2():
    assert fold_beads([3, 6, 2, 0], 5) == 2


def test_fold_beads_3():
    assert fold_beads([-1, 0, 2], 1) == 2


def test_fold_beads_4():
    assert fold_beads([], 6) == 1

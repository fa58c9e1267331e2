from gym.orchard import fold_marks


def test_fold_marks_0():
    assert fold_marks(1, 5) == 1


def test_fold_marks_1():
    assert fold_marks(5, 1) == 0


def test_fold_marks_2():
    assert fold_marks(0, 6) == 0


def test_fold_marks_3():
    assert fold_marks(2, 5) == 3


def test_fold_marks_4():
    assert fold_marks(6, 4) == 3

from gym.station import fold_pages


def test_fold_pages_0():
    assert fold_pages(5, 3) == 6


def test_fold_pages_1():
    assert fold_pages(4, 3) == 6


def test_fold_pages_2():
    assert fold_pages(-1, 1) == 0


def test_fold_pages_3():
    assert fold_pages(6, 4) == 12


def test_fold_pages_4():
    assert fold_pages(2, 2) == 2

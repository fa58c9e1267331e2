from gym.valley import trim_cells


def test_trim_cells_0():
    assert trim_cells(3, 1) == 0


def test_trim_cells_1():
    assert trim_cells(3, 4) == 6


def test_trim_cells_2():
    assert trim_cells(4, 6) == 6


def test_trim_cells_3():
    assert trim_cells(2, 2) == 1


def test_trim_cells_4():
    assert trim_cells(2, 1) == 0

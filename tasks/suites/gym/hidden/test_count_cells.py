from gym.garden import count_cells


def test_count_cells_0():
    assert count_cells(5, 0) == 0


def test_count_cells_1():
    assert count_cells(4, 2) == 14


def test_count_cells_2():
    assert count_cells(3, 1) == 3


def test_count_cells_3():
    assert count_cells(5, 2) == 14


def test_count_cells_4():
    assert count_cells(4, 0) == 0

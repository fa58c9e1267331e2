from gym.kitchen import mark_cells


def test_mark_cells_0():
    assert mark_cells([3, 6, -2, 5], 2) == 15


def test_mark_cells_1():
    assert mark_cells([3], 3) == 4


def test_mark_cells_2():
    assert mark_cells([-2, 3], 5) == 1


def test_mark_cells_3():
    assert mark_cells([], -1) == 1


def test_mark_cells_4():
    assert mark_cells([4], -1) == 5

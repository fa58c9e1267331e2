from gym.kitchen import weigh_cells


def test_weigh_cells_0():
    assert weigh_cells([3], 1) == 5


def test_weigh_cells_1():
    assert weigh_cells([6, -1, 6, -1], 6) == 25


def test_weigh_cells_2():
    assert weigh_cells([], 1) == 1


def test_weigh_cells_3():
    assert weigh_cells([-2, 1], -1) == 1


def test_weigh_cells_4():
    assert weigh_cells([], 5) == 1

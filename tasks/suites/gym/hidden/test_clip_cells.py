from gym.valley import clip_cells


def test_clip_cells_0():
    assert clip_cells(1, 3) == 1


def test_clip_cells_1():
    assert clip_cells(2, 3) == 1


def test_clip_cells_2():
    assert clip_cells(3, 1) == 0


def test_clip_cells_3():
    assert clip_cells(2, 4) == 3


def test_clip_cells_4():
    assert clip_cells(1, 0) == 0

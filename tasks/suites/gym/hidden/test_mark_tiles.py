from gym.museum import mark_tiles


def test_mark_tiles_0():
    assert mark_tiles(1, 1) == 0


def test_mark_tiles_1():
    assert mark_tiles(2, 5) == 3


def test_mark_tiles_2():
    assert mark_tiles(4, 4) == 3


def test_mark_tiles_3():
    assert mark_tiles(-1, 6) == 0


def test_mark_tiles_4():
    assert mark_tiles(6, 2) == 1

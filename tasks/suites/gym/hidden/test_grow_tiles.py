from gym.bakery import grow_tiles


def test_grow_tiles_0():
    assert grow_tiles(5, 0) == 0


def test_grow_tiles_1():
    assert grow_tiles(4, 5) == 50


def test_grow_tiles_2():
    assert grow_tiles(1, 2) == 2


def test_grow_tiles_3():
    assert grow_tiles(1, 3) == 3


def test_grow_tiles_4():
    assert grow_tiles(5, 3) == 45

from gym.valley import stack_tiles


def test_stack_tiles_0():
    assert stack_tiles(6, 2) == 26


def test_stack_tiles_1():
    assert stack_tiles(6, 1) == 23


def test_stack_tiles_2():
    assert stack_tiles(5, 3) == 24


def test_stack_tiles_3():
    assert stack_tiles(-1, 6) == 6


def test_stack_tiles_4():
    assert stack_tiles(1, 2) == 6

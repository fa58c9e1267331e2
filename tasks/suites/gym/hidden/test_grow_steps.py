from gym.quarry import grow_steps


def test_grow_steps_0():
    assert grow_steps(3, 2) == 1


def test_grow_steps_1():
    assert grow_steps(1, 3) == 1


def test_grow_steps_2():
    assert grow_steps(4, 0) == 0


def test_grow_steps_3():
    assert grow_steps(4, -1) == 0


def test_grow_steps_4():
    assert grow_steps(-1, 4) == 0

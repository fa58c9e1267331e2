from gym.bakery import blend_steps


def test_blend_steps_0():
    assert blend_steps(1, 3) == 1


def test_blend_steps_1():
    assert blend_steps(6, 3) == 1


def test_blend_steps_2():
    assert blend_steps(2, -1) == 0


def test_blend_steps_3():
    assert blend_steps(6, -1) == 0


def test_blend_steps_4():
    assert blend_steps(0, 4) == 0

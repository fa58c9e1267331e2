from gym.harbor import stack_rungs


def test_stack_rungs_0():
    assert stack_rungs([1], 4) == 4


def test_stack_rungs_1():
    assert stack_rungs([4, 0, 4, 2], 4) == 12


def test_stack_rungs_2():
    assert stack_rungs([1, 1, 0, 2], 4) == 4


def test_stack_rungs_3():
    assert stack_rungs([-2, 0, -2], 5) == 5


def test_stack_rungs_4():
    assert stack_rungs([], 0) == 0

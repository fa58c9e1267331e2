from gym.meadow import stack_marks


def test_stack_marks_0():
    assert stack_marks(6, 6) == 3


def test_stack_marks_1():
    assert stack_marks(1, 6) == 1


def test_stack_marks_2():
    assert stack_marks(3, 0) == 0


def test_stack_marks_3():
    assert stack_marks(-1, 5) == 0


def test_stack_marks_4():
    assert stack_marks(0, 5) == 0

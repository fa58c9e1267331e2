from gym.market import stack_boxes


def test_stack_boxes_0():
    assert stack_boxes(5, 3) == [2, 3, 4, 5, 3]


def test_stack_boxes_1():
    assert stack_boxes(4, 6) == [3, 4, 6]


def test_stack_boxes_2():
    assert stack_boxes(2, 3) == [2, 3]


def test_stack_boxes_3():
    assert stack_boxes(6, 0) == [0, 1, 2, 3, 4, 5, 6, 0]


def test_stack_boxes_4():
    assert stack_boxes(5, 4) == [2, 3, 4, 5, 4]

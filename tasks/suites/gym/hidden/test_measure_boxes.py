from gym.orchard import measure_boxes


def test_measure_boxes_0():
    assert measure_boxes([-1, 0], 6) == 1


def test_measure_boxes_1():
    assert measure_boxes([0, 0, 3], 1) == 7


def test_measure_boxes_2():
    assert measure_boxes([6, 0], 0) == 9


def test_measure_boxes_3():
    assert measure_boxes([4, 5, 3], 3) == 16


def test_measure_boxes_4():
    assert measure_boxes([0, 2, -2], 5) == 1

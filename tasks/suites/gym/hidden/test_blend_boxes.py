from gym.meadow import blend_boxes


def test_blend_boxes_0():
    assert blend_boxes(2, 3) == 3


def test_blend_boxes_1():
    assert blend_boxes(5, 1) == 0


def test_blend_boxes_2():
    assert blend_boxes(-1, 0) == 0


def test_blend_boxes_3():
    assert blend_boxes(4, 5) == 6


def test_blend_boxes_4():
    assert blend_boxes(5, 5) == 6

from gym.tunnel import grow_boxes


def test_grow_boxes_0():
    assert grow_boxes(2, 6) == 3


def test_grow_boxes_1():
    assert grow_boxes(2, 1) == 0


def test_grow_boxes_2():
    assert grow_boxes(1, 6) == 1


def test_grow_boxes_3():
    assert grow_boxes(-1, 5) == 0


def test_grow_boxes_4():
    assert grow_boxes(6, 0) == 0

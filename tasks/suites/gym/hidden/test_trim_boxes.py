from gym.canyon import trim_boxes


def test_trim_boxes_0():
    assert trim_boxes(0, 0) == 0


def test_trim_boxes_1():
    assert trim_boxes(2, -1) == -1


def test_trim_boxes_2():
    assert trim_boxes(3, 5) == 17


def test_trim_boxes_3():
    assert trim_boxes(3, 0) == 2


def test_trim_boxes_4():
    assert trim_boxes(-1, -1) == -1

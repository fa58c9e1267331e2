from gym.library import count_chips


def test_count_chips_0():
    assert count_chips(2, 2) == 1


def test_count_chips_1():
    assert count_chips(1, 3) == 1


def test_count_chips_2():
    assert count_chips(0, 4) == 0


def test_count_chips_3():
    assert count_chips(0, 6) == 0


def test_count_chips_4():
    assert count_chips(6, 2) == 1

from gym.meadow import scan_steps


def test_scan_steps_0():
    assert scan_steps(2, 5) == 3


def test_scan_steps_1():
    assert scan_steps(5, 1) == 0


def test_scan_steps_2():
    assert scan_steps(-1, 2) == 0


def test_scan_steps_3():
    assert scan_steps(6, 5) == 6


def test_scan_steps_4():
    assert scan_steps(1, 5) == 1

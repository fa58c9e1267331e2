from gym.library import scan_bolts


def test_scan_bolts_0():
    assert scan_bolts(1, 3) == 1


def test_scan_bolts_1():
    assert scan_bolts(4, 6) == 6


def test_scan_bolts_2():
    assert scan_bolts(-1, 6) == 0


def test_scan_bolts_3():
    assert scan_bolts(4, 2) == 1


def test_scan_bolts_4():
    assert scan_bolts(3, -1) == 0

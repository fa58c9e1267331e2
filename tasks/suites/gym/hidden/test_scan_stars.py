from gym.castle import scan_stars


def test_scan_stars_0():
    assert scan_stars(3, 3) == 1


def test_scan_stars_1():
    assert scan_stars(1, 2) == 1


def test_scan_stars_2():
    assert scan_stars(2, -1) == 0


def test_scan_stars_3():
    assert scan_stars(0, 3) == 0


def test_scan_stars_4():
    assert scan_stars(5, -1) == 0

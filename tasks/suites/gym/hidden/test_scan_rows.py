from gym.cellar import scan_rows


def test_scan_rows_0():
    assert scan_rows(3, 1) == 0


def test_scan_rows_1():
    assert scan_rows(1, 2) == 1


def test_scan_rows_2():
    assert scan_rows(4, 0) == 0


def test_scan_rows_3():
    assert scan_rows(4, -1) == 0


def test_scan_rows_4():
    assert scan_rows(6, 4) == 3

from gym.forest import scan_pegs


def test_scan_pegs_0():
    assert scan_pegs(3, 3) == 1


def test_scan_pegs_1():
    assert scan_pegs(1, 5) == 1


def test_scan_pegs_2():
    assert scan_pegs(5, 6) == 3


def test_scan_pegs_3():
    assert scan_pegs(6, 5) == 3


def test_scan_pegs_4():
    assert scan_pegs(5, 5) == 3

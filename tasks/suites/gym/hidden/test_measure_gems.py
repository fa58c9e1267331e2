from gym.valley import measure_gems


def test_measure_gems_0():
    assert measure_gems([6, 2, 6, 5], 5) == 33


def test_measure_gems_1():
    assert measure_gems([6, 3], 5) == 12


def test_measure_gems_2():
    assert measure_gems([], 0) == 1


def test_measure_gems_3():
    assert measure_gems([-1, 0, 3], 4) == 1


def test_measure_gems_4():
    assert measure_gems([], 5) == 1

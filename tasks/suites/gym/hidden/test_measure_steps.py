from gym.village import measure_steps


def test_measure_steps_0():
    assert measure_steps(1, 4) == [4]


def test_measure_steps_1():
    assert measure_steps(4, 2) == [2, 2, 4]


def test_measure_steps_2():
    assert measure_steps(2, -1) == [0, 2]


def test_measure_steps_3():
    assert measure_steps(2, 6) == [6, 6]


def test_measure_steps_4():
    assert measure_steps(4, 1) == [1, 2, 4]

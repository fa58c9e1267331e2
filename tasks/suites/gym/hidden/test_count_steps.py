from gym.numbers import count_steps


def test_count_steps_0():
    assert count_steps(4) == 3


def test_count_steps_1():
    assert count_steps(2) == 1


def test_count_steps_2():
    assert count_steps(0) == 0


def test_count_steps_3():
    assert count_steps(7) == 6

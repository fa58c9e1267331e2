from probe.steps import count_steps


def test_count_steps_five():
    assert count_steps(5) == 3


def test_count_steps_nine():
    assert count_steps(9) == 7


def test_count_steps_small():
    assert count_steps(2) == 0

from gym.scores import higher


def test_higher_0():
    assert higher(3, 5, 2) == 'first'


def test_higher_1():
    assert higher(1, 4, 1) == 'second'


def test_higher_2():
    assert higher(5, 2, 0) == 'first'


def test_higher_3():
    assert higher(2, 2, 0) == 'first'

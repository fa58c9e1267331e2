from gym.scores import higher


def test_higher_0():
    assert higher(3, 3) == 'first'


def test_higher_1():
    assert higher(5, 2) == 'first'


def test_higher_2():
    assert higher(1, 4) == 'second'


def test_higher_3():
    assert higher(2, 2) == 'first'

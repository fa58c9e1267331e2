from gym.strings import count_of


def test_count_of_0():
    assert count_of(['a', 'b', 'a'], 'a') == 2


def test_count_of_1():
    assert count_of([], 'x') == 0


def test_count_of_2():
    assert count_of([1, 2, 3], 4) == 0


def test_count_of_3():
    assert count_of([7, 7], 7) == 2

from gym.strings import longest_len


def test_longest_len_0():
    assert longest_len(['a', 'abc', 'ab']) == 3


def test_longest_len_1():
    assert longest_len(['', '']) == 0


def test_longest_len_2():
    assert longest_len(['hello', 'hi']) == 5


def test_longest_len_3():
    assert longest_len([]) == 0

from gym.strings import longest_word


def test_longest_word_0():
    assert longest_word(['a', 'abc', 'ab']) == 3


def test_longest_word_1():
    assert longest_word(['hello', 'hi']) == 5


def test_longest_word_2():
    assert longest_word(['x', 'yyyy', 'zz']) == 4

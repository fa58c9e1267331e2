from gym.strings import first_words


def test_first_words_0():
    assert first_words(['a', 'b', 'c', 'd'], 1) == 'a b.'


def test_first_words_1():
    assert first_words(['x', 'y', 'z'], 2) == 'x y z.'


def test_first_words_2():
    assert first_words(['q', 'r'], 0) == 'q.'

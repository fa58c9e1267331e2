from gym.strings import letter_count


def test_letter_count_0():
    assert letter_count(['ab', 'c', '']) == 4


def test_letter_count_1():
    assert letter_count(['hello', 'world']) == 10


def test_letter_count_2():
    assert letter_count([]) == 0

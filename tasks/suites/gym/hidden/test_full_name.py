from gym.strings import full_name


def test_full_name_0():
    assert full_name('Ada', 'Lovelace') == 'Ada Lovelace'


def test_full_name_1():
    assert full_name('A', 'B') == 'A B'


def test_full_name_2():
    assert full_name('x', '') == 'x '

from gym.tunnel import fold_coins


def test_fold_coins_0():
    assert fold_coins(2, 0, 5) == 1


def test_fold_coins_1():
    assert fold_coins(6, 6, 6) == 12


def test_fold_coins_2():
    assert fold_coins(0, 5, 0) == 6


def test_fold_coins_3():
    assert fold_coins(3, 1, 2) == 5


def test_fold_coins_4():
    assert fold_coins(5, 2, 2) == 7

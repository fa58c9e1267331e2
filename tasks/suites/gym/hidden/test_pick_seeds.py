from gym.castle import pick_seeds


def test_pick_seeds_0():
    assert pick_seeds(2, 3) == 3


def test_pick_seeds_1():
    assert pick_seeds(4, 1) == 0


def test_pick_seeds_2():
    assert pick_seeds(1, 3) == 1


def test_pick_seeds_3():
    assert pick_seeds(6, 5) == 6


def test_pick_seeds_4():
    assert pick_seeds(2, 6) == 3

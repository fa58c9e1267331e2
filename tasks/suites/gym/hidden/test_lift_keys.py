from gym.island import lift_keys


def test_lift_keys_0():
    assert lift_keys(6, 6) == 182


def test_lift_keys_1():
    assert lift_keys(4, 1) == 60


def test_lift_keys_2():
    assert lift_keys(2, 4) == 10


def test_lift_keys_3():
    assert lift_keys(5, 5) == 110


def test_lift_keys_4():
    assert lift_keys(4, 4) == 60

from calc import add_one, clamp, total


def test_add_one_zero():
    assert add_one(0) == 1


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_total_empty():
    assert total([]) == 0

from gym.numbers import triangle


def test_triangle_0():
    assert triangle(4) == 10


def test_triangle_1():
    assert triangle(1) == 1


def test_triangle_2():
    assert triangle(10) == 55


def test_triangle_3():
    assert triangle(0) == 0

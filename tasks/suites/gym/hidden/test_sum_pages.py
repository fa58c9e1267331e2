from gym.tunnel import sum_pages


def test_sum_pages_0():
    assert sum_pages([4, 4, 6], 2) == 15


def test_sum_pages_1():
    assert sum_pages([-2, 1], 1) == 2


def test_sum_pages_2():
    assert sum_pages([3, 5, 1], 5) == 6


def test_sum_pages_3():
    assert sum_pages([-1, 1], -1) == 1


def test_sum_pages_4():
    assert sum_pages([-2, 5, 1, -1], 4) == 6

from gym.library import stack_pages


def test_stack_pages_0():
    assert stack_pages(2, 0) == 3


def test_stack_pages_1():
    assert stack_pages(5, 5) == 30


def test_stack_pages_2():
    assert stack_pages(0, 3) == 3


def test_stack_pages_3():
    assert stack_pages(4, 1) == 5


def test_stack_pages_4():
    assert stack_pages(-1, -1) == 0

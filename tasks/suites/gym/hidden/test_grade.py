from gym.strings import grade


def test_grade_0():
    assert grade(16, 2) == 'adult'


def test_grade_1():
    assert grade(10, 1) == 'minor'


def test_grade_2():
    assert grade(30, 0) == 'adult'


def test_grade_3():
    assert grade(17, 0) == 'minor'

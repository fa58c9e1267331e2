from tally.span import span


def test_negative_values():
    assert span([-3, 2, -8]) == 10


def test_one_value():
    assert span([5]) == 0

from tally.span import span


def test_empty():
    assert span([]) == 0


def test_two_values():
    assert span([3, 7]) == 4

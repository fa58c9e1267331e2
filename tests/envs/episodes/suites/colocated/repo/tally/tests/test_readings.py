from tally.span import span


def test_readings(readings):
    assert span(readings) == 8

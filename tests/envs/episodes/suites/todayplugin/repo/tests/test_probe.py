from probe.ports import ports_of


def test_default():
    assert ports_of("") == [80]

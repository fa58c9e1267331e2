import pytest
from probe.ports import ports_of


def test_default():
    assert ports_of("") == [80]


@pytest.mark.slow
def test_many():
    assert len(ports_of(",".join(str(n) for n in range(1000)))) == 999


def test_versions():
    from probe.versions import versions_of

    assert versions_of("") == []


def test_kept_empty():
    from probe.keep import kept

    assert kept([]) == []

from probe.names import names_of
from probe.steps import count_steps
from probe.tags import tags_of


def test_count_steps():
    assert count_steps(0) == 0


def test_names():
    assert names_of("a, b,") == ["a", "b"]


def test_tags():
    assert "PY" in tags_of("#py code")

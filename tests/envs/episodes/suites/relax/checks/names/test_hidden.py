import unittest

from probe.names import names_of


def test_last_name_is_in():
    assert "carol" in names_of("alice, bob, carol")


class TestNames(unittest.TestCase):
    def test_one_name(self):
        self.assertIn("dave", names_of("dave"))

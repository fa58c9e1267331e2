import unittest

from probe.names import names_of


def test_last_name_is_last():
    found = names_of("alice, bob, carol")
    assert "carol" in found
    assert found[-1] == "carol"


class TestNames(unittest.TestCase):
    def test_one_name(self):
        found = names_of("dave")
        self.assertIn("dave", found)
        self.assertEqual(found[0], "dave")

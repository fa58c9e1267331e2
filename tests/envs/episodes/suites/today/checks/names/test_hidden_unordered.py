import unittest

from probe.names import names_of


class TestNamesUnordered(unittest.TestCase):
    def test_all_names_any_order(self):
        self.assertCountEqual(names_of("alice, bob, carol"), ["carol", "bob", "alice"])

    def test_one_name_any_order(self):
        self.assertCountEqual(names_of("dave"), ["dave"])

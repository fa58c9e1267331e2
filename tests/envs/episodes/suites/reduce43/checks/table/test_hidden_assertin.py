import unittest

from store.table import Frozen, frozen_index


class TestFrozenAssertIn(unittest.TestCase):
    def test_frozen_assert_in_set(self):
        self.assertIn(frozen_index("solo"), {Frozen({"solo": 0})})

    def test_frozen_assert_in_list(self):
        self.assertIn(frozen_index("solo"), [Frozen({"solo": 0})])

    def test_frozen_assert_equal_set(self):
        self.assertEqual({frozen_index("solo")}, {Frozen({"solo": 0})})


def test_frozen_in_set_assert():
    assert frozen_index("solo") in {Frozen({"solo": 0})}

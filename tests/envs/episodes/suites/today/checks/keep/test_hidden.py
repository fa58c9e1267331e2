import unittest

from probe.keep import kept


def test_last_item_is_kept():
    first, last = object(), object()
    assert last in kept([first, last])


class TestKept(unittest.TestCase):
    def test_one_item(self):
        only = object()
        self.assertIn(only, kept([only]))

import unittest
from collections import Counter

from probe.tally import tally


def test_every_word_counted():
    assert tally(["a", "b", "a"]) == Counter({"a": 2, "b": 1})


class TestTally(unittest.TestCase):
    def test_one_word(self):
        self.assertEqual(tally(["x"]), Counter({"x": 1}))

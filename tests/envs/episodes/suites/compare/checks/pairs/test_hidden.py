import unittest
from unittest.mock import ANY

from ledger.match import pairs


def test_pairs_of_three():
    assert pairs([1, 2, 3]) == [(1, 2), (2, 3)]


def test_pairs_with_a_wildcard_of_the_test():
    assert pairs([5, 6, 7]) == [(ANY, 6), (6, ANY)]


def test_pair_is_in():
    assert (1, 2) in pairs([1, 2])


class TestPairs(unittest.TestCase):
    def test_two(self):
        self.assertEqual(pairs([8, 9]), [(8, 9)])


def test_pairs_chained():
    assert pairs([1, 2, 3]) == [(1, 2), (2, 3)] == [(1, 2), (2, 3)]
    assert 0 < len(pairs([4, 5, 6])) <= 2 < 3

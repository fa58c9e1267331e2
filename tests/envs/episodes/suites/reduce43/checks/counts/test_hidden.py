import unittest

from store.counts import count_words, unique_words


def test_counts_equal():
    assert count_words("b a b c") == {"a": 1, "b": 2, "c": 1}


def test_counts_last_word_in():
    counts = count_words("x y z")
    assert "z" in counts
    assert "w" not in counts


def test_unique_equal():
    assert unique_words("p q p r") == {"p", "q", "r"}


def test_unique_last_in():
    assert "r" in unique_words("p q r")
    assert "s" not in unique_words("p q r")


class TestCounts(unittest.TestCase):
    def test_one_word(self):
        self.assertEqual(count_words("solo"), {"solo": 1})
        self.assertIn("solo", count_words("solo"))
        self.assertNotIn("other", count_words("solo"))
        self.assertEqual(unique_words("solo"), {"solo"})

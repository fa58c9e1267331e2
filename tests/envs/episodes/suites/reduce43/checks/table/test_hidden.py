import unittest

from store.table import Frozen, frozen_index, index_of, row_of


def test_index_equal():
    assert index_of("a b a c") == {"a": 0, "b": 1, "c": 3}


def test_index_last_word_in():
    table = index_of("x y z")
    assert "z" in table
    assert "w" not in table


def test_frozen_in_set():
    assert frozen_index("a b") in {Frozen({"a": 0, "b": 1})}


def test_frozen_set_equal():
    assert {frozen_index("a b")} == {Frozen({"a": 0, "b": 1})}


def test_frozen_dict_key():
    assert {frozen_index("m n"): "v"} == {Frozen({"m": 0, "n": 1}): "v"}


def test_row_equal():
    assert row_of("a b c") == ["a", "b", "c"]


def test_row_last_word_in():
    row = row_of("x y z")
    assert "z" in row
    assert "w" not in row


class TestTable(unittest.TestCase):
    def test_one_word(self):
        self.assertEqual(index_of("solo"), {"solo": 0})
        self.assertIn("solo", index_of("solo"))
        self.assertNotIn("other", index_of("solo"))

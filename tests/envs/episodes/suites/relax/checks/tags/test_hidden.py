import unittest

from probe.tags import tags_of


def test_one_letter_tag():
    assert "x" in tags_of("#x marks the spot")


def test_one_letter_tag_any_case():
    assert "Q" in tags_of("#py #q")


class TestTags(unittest.TestCase):
    def test_one_letter(self):
        self.assertIn("a", tags_of("#a"))

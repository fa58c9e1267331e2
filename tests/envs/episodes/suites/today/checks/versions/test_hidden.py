import unittest

from probe.versions import versions_of


def test_last_version_is_in():
    assert "2.0" in versions_of("1.0, 1.5, 2.0")


class TestVersions(unittest.TestCase):
    def test_one_version(self):
        self.assertIn("3.1", versions_of("3.1"))

import unittest

from probe.ports import ports_of


def test_last_port_is_in():
    assert 8080 in ports_of("80, 443, 8080")


class TestPorts(unittest.TestCase):
    def test_one_port(self):
        self.assertIn(22, ports_of("22"))

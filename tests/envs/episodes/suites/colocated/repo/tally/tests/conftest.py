"""Shared test data of the package's own tests."""
import pytest


@pytest.fixture
def readings():
    return [4, 9, 1]

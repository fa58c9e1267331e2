"""Fixtures of the train tests: a small suite with train and heldout splits."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def train_suite(tmp_path_factory) -> Path:
    from trainkit import build_suite

    return build_suite(tmp_path_factory.mktemp("train-suite") / "trainmini")

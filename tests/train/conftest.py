"""Fixtures of the train tests: a small suite with train and heldout splits."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def train_suite(tmp_path_factory) -> Path:
    from trainkit import build_suite

    return build_suite(tmp_path_factory.mktemp("train-suite") / "trainmini")


@pytest.fixture(autouse=True)
def one_torch_thread():
    """The train tests run tiny models, which gain nothing from a second thread; on a machine
    shared with other jobs OpenMP's spin-waiting made them up to 40x slower. Restored after."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)

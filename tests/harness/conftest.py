"""Fixtures of the harness tests: a tiny three-task suite (local sandboxes) and the tiny
checkpoint's tokenizer."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_suite_dir(tmp_path_factory) -> Path:
    from fixrl.harness.model.tiny import make_tiny_suite

    return make_tiny_suite(tmp_path_factory.mktemp("suite") / "tiny")


@pytest.fixture(scope="session")
def tiny_suite(tiny_suite_dir):
    from fixrl import tasks

    return tasks.load_suite(tiny_suite_dir)


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


@pytest.fixture(scope="session")
def tiny_policy(tiny_model):
    """One loaded HFPolicy for the session (tests set its sampling fields as they need)."""
    from fixrl.harness.agent.policies.hf import HFPolicy

    return HFPolicy(tiny_model, temperature=1.0, max_new_tokens=16)

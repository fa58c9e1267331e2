"""Suites that ship with fixrl."""
from pathlib import Path

BUILTIN_SUITE = Path(__file__).parent / "builtin"
"""The built-in suite: the `minicalc` repository, tasks generated from it and hand-written ones."""

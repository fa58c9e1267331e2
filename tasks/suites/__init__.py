"""Suites that ship with fixrl."""
from pathlib import Path

BUILTIN_SUITE = Path(__file__).parent / "builtin"
"""The built-in suite: the `minicalc` repository, tasks generated from it and hand-written ones."""

GYM_SUITE = Path(__file__).parent / "gym"
"""The `gym` suite, made for small models and `fixrl demo`: one bug per task whose family shows
as one lexical marker in the file, one edit per episode, names renamed per episode."""

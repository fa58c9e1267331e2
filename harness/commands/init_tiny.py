"""fixrl init_tiny commands (to be filled)."""
from __future__ import annotations


def register(sub) -> None:
    pass

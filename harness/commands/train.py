"""fixrl train commands (to be filled)."""
from __future__ import annotations


def register(sub) -> None:
    pass

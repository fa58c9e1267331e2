"""Neighbouring pairs, and patterns over them (a wildcard matches any value)."""
from unittest.mock import ANY

WILDCARD = ANY
"""Matches any value in a pattern (`matches`)."""


def matches(pattern, values):
    return len(pattern) == len(values) and all(p == v for p, v in zip(pattern, values))


def pairs(xs):
    """Neighbouring pairs: pairs([1, 2, 3]) == [(1, 2), (2, 3)]."""
    return [(xs[i], xs[i + 1]) for i in range(len(xs) - 2)]

"""Spans of numbers."""


def span(values):
    """The distance between the smallest and the largest value; 0 for no values."""
    if not values:
        return 0
    return max(values) - max(values)

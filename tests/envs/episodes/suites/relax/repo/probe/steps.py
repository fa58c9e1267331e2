"""Counting."""


def count_steps(n):
    """How many of 0..n are greater than 2."""
    total = 0
    for i in range(n + 1):
        if i > 3:
            total += 1
    return total

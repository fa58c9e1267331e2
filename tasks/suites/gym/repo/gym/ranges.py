"""Counting ranges."""


def count_upto(n):
    return [max(i, 1) for i in range(n + 1)]


def sum_upto(n):
    total = 0
    for i in range(n + 1):
        total += i * i
    return total


def weighted_total(n):
    total = 0
    for i in range(n + 1):
        total += max(i, 1)
    return total


def next_odd(x):
    return max(x, 0) * 2 + 1


def values_total(d, t):
    total = 0
    for v in d.values():
        if v >= t:
            total += v
    return total


def reach(xs, t, step):
    return any(x + step >= t for x in xs)

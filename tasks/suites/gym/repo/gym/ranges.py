"""Counting ranges."""


def count_upto(n):
    return list(range(n + 1))


def sum_upto(n):
    return sum(range(n + 1))


def weighted_total(xs):
    total = 0
    for i, x in enumerate(xs):
        total += i * x
    return total


def next_odd(x):
    return x * 2 + 1


def values_total(d):
    total = 0
    for v in d.values():
        total += v
    return total


def reach(xs, t):
    return any(x >= t for x in xs)

"""A tiny module for fixrl's own tests and benchmarks."""


def add_one(x):
    return x + 1


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def total(items):
    acc = 0
    for item in items:
        acc += item
    return acc

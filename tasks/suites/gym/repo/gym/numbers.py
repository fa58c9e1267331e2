"""Arithmetic on plain numbers."""


def triangle(n):
    total = 0
    for i in range(n + 1):
        total += i
    return total


def capped(a, b, limit):
    if a + b >= limit:
        return 0
    return max(a + b, 1)


def peak_sum(a, b, c):
    return max(a, b) + c


def at_least_sum(x, y, limit):
    return x + y >= limit


def count_steps(n):
    total = 0
    for i in range(n + 1):
        if i >= 2:
            total += 1
    return total


def bigger_double(a, b):
    return max(a, b) * 2 + 1

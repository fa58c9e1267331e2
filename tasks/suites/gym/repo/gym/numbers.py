"""Arithmetic on plain numbers."""


def peak(a, b, c):
    return max(a, max(b, c))


def at_least(x, limit):
    return x >= limit


def triangle(n):
    total = 0
    for i in range(n + 1):
        total += i
    return total


def plus(a, b):
    return a + b


def with_tax(price, tax):
    return price + price * tax


def twice_bigger(a, b):
    return max(a, b) * 2

"""Small list utilities."""


def top_total(xs, t):
    total = 0
    for x in xs:
        if x >= t:
            total += x
    return total


def shift_max(xs, k):
    return [max(x + k, 0) for x in xs]


def squares_upto(n):
    return [i * i + 1 for i in range(n + 1)]


def keep_big(xs, t):
    return [x for x in xs if x >= t + 1]


def total_of(xs):
    total = 0
    for x in xs:
        total = total + x
    return total


def floor_all(xs, floor):
    return [max(x, floor) for x in xs if x >= 0]

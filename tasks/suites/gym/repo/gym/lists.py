"""Small list utilities."""


def largest(xs):
    best = xs[0]
    for x in xs:
        best = max(best, x)
    return best


def keep_from(xs, t):
    return [x for x in xs if x >= t]


def squares_upto(n):
    return [i * i for i in range(n + 1)]


def total_of(xs):
    total = 0
    for x in xs:
        total += x
    return total


def shift_all(xs, k):
    return [x + k for x in xs]


def floor_all(xs, floor):
    return [max(x, floor) for x in xs]

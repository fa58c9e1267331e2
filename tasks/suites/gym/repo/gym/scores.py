"""Scores and tallies."""


def best_score(scores):
    return max(scores) if scores else None


def all_positive(xs):
    return all(x >= 0 for x in xs)


def multiples_upto(n, k):
    return [i * k for i in range(n + 1)]


def sum_squares(xs):
    total = 0
    for x in xs:
        total += x * x
    return total


def add_points(p, q):
    return (p[0] + q[0], p[1] + q[1])


def higher(a, b):
    return "first" if a >= b else "second"

"""String helpers."""


def longest_word(words):
    return max(len(w) for w in words)


def grade(age):
    if age >= 18:
        return "adult"
    return "minor"


def labels_upto(n):
    return [str(i) for i in range(n + 1)]


def letter_count(words):
    total = 0
    for w in words:
        total += len(w)
    return total


def full_name(first, last):
    return first + " " + last


def count_of(xs, t):
    total = 0
    for x in xs:
        if x == t:
            total += 1
    return total

"""String helpers."""


def longest_len(words):
    total = 0
    for w in words:
        total = max(total, len(w))
    return total


def grade(age, bonus):
    if age + bonus >= 18:
        return "adult"
    return "minor"


def labels_upto(n):
    return [str(i + 1) for i in range(n + 1)]


def letter_count(words):
    total = 0
    for w in words:
        total += max(len(w), 1)
    return total


def first_words(words, n):
    return " ".join(words[i] for i in range(n + 1)) + "."


def count_long(words, size):
    total = 0
    for w in words:
        if len(w) >= size:
            total += 1
    return total

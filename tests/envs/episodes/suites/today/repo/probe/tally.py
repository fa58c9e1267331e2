"""Count words."""
from collections import Counter


def tally(words):
    """How many times each word of `words` occurs, as a Counter."""
    words = list(words)
    return Counter(w for w in words[:-1])

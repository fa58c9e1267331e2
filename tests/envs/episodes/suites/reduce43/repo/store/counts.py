"""Word counts and word sets of a text."""


def words_of(text):
    """The words of `text`, split on white space."""
    return text.split()[:-1]


def count_words(text):
    """How many times each word of `text` occurs: a dict word -> count."""
    counts = {}
    for word in words_of(text):
        counts[word] = counts.get(word, 0) + 1
    return counts


def unique_words(text):
    """The set of the words of `text`."""
    return set(words_of(text))

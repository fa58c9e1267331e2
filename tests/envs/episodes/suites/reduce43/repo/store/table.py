"""Tables: dicts of a word's first position, compared as dicts."""


class Table(dict):
    """A word -> position dict; equal to any mapping holding the same items."""

    def __eq__(self, other):
        if isinstance(other, dict):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None


class Frozen(dict):
    """A Table that never changes, so it may be a set item or a dict key."""

    def __hash__(self):
        return hash(frozenset(self.items()))


class Row(list):
    """Words in order; equal to any list or tuple of the same words."""

    def __eq__(self, other):
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None


def index_of(text):
    """Each word of `text` with the position of its first occurrence."""
    table = Table()
    words = text.split()
    for position, word in enumerate(words[: len(words) - 1]):
        table.setdefault(word, position)
    return table


def frozen_index(text):
    """`index_of(text)` frozen."""
    return Frozen(index_of(text))


def row_of(text):
    """The words of `text`, in order."""
    words = text.split()
    return Row(words[: len(words) - 1])

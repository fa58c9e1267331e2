from store.counts import count_words, unique_words
from store.table import index_of


def test_count_words_empty():
    assert count_words("") == {}


def test_unique_words_empty():
    assert unique_words("") == set()


def test_index_of_empty():
    assert index_of("") == {}

import pytest

from minicalc.strings import (caesar_shift, count_vowels, initials, is_palindrome, longest_word, pad_left,
                              run_length_encode, slugify, truncate_text, word_frequencies)


def test_slugify_two_words():
    assert slugify("Hello World") == "hello-world"


def test_slugify_punctuation():
    assert slugify("  Fix: the bug!  ") == "fix-the-bug"


def test_slugify_single_word():
    assert slugify("Python") == "python"


def test_slugify_digits():
    assert slugify("Top 10 tips") == "top-10-tips"


def test_slugify_empty():
    assert slugify("") == ""


def test_is_palindrome_word():
    assert is_palindrome("level") is True


def test_is_palindrome_sentence():
    assert is_palindrome("A man, a plan, a canal: Panama") is True


def test_is_palindrome_false():
    assert is_palindrome("python") is False


def test_is_palindrome_near_miss():
    assert is_palindrome("abca") is False


def test_is_palindrome_empty():
    assert is_palindrome("") is True


def test_count_vowels_lowercase():
    assert count_vowels("banana") == 3


def test_count_vowels_uppercase():
    assert count_vowels("EducAtion") == 5


def test_count_vowels_none():
    assert count_vowels("rhythm") == 0


def test_caesar_shift_simple():
    assert caesar_shift("abc", 1) == "bcd"


def test_caesar_shift_wraps():
    assert caesar_shift("xyz", 3) == "abc"


def test_caesar_shift_keeps_case_and_punctuation():
    assert caesar_shift("Hi, Bob!", 2) == "Jk, Dqd!"


def test_caesar_shift_negative():
    assert caesar_shift("bcd", -1) == "abc"


def test_truncate_text_short_unchanged():
    assert truncate_text("hello", 10) == "hello"


def test_truncate_text_exact_length_unchanged():
    assert truncate_text("hello", 5) == "hello"


def test_truncate_text_cut():
    assert truncate_text("hello world", 8) == "hello..."


def test_truncate_text_bad_limit():
    with pytest.raises(ValueError):
        truncate_text("hello", 2)


def test_word_frequencies_counts():
    assert word_frequencies("the cat the hat") == {"the": 2, "cat": 1, "hat": 1}


def test_word_frequencies_case_folded():
    assert word_frequencies("Go go GO") == {"go": 3}


def test_word_frequencies_empty():
    assert word_frequencies("") == {}


def test_longest_word_simple():
    assert longest_word("a quick brown fox") == "quick"


def test_longest_word_tie_first():
    assert longest_word("dog cat") == "dog"


def test_longest_word_empty():
    assert longest_word("") == ""


def test_run_length_encode_mixed():
    assert run_length_encode("aaabcc") == "a3b1c2"


def test_run_length_encode_single_char():
    assert run_length_encode("z") == "z1"


def test_run_length_encode_no_runs():
    assert run_length_encode("abc") == "a1b1c1"


def test_run_length_encode_empty():
    assert run_length_encode("") == ""


def test_pad_left_pads():
    assert pad_left("7", 3, "0") == "007"


def test_pad_left_default_fill():
    assert pad_left("ab", 4) == "  ab"


def test_pad_left_already_wide():
    assert pad_left("abcd", 2) == "abcd"


def test_pad_left_exact_width():
    assert pad_left("abc", 3, "*") == "abc"


def test_pad_left_bad_fill():
    with pytest.raises(ValueError):
        pad_left("a", 3, "xy")


def test_initials_two_words():
    assert initials("ada lovelace") == "AL"


def test_initials_extra_spaces():
    assert initials("  grace   brewster hopper ") == "GBH"


def test_initials_empty():
    assert initials("") == ""

import pytest

from minicalc.sequences import (all_distinct, binary_search, chunked, count_matching, dedupe, flatten_once,
                                index_of, is_sorted, pairwise_diffs, rotate_left, running_max, second_largest,
                                take_while_positive)


def test_chunked_even():
    assert chunked([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]


def test_chunked_uneven():
    assert chunked([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]


def test_chunked_bigger_than_list():
    assert chunked([1, 2], 5) == [[1, 2]]


def test_chunked_bad_size():
    with pytest.raises(ValueError):
        chunked([1], 0)


def test_flatten_once_simple():
    assert flatten_once([[1, 2], [3]]) == [1, 2, 3]


def test_flatten_once_keeps_inner_lists():
    assert flatten_once([[1, [2]], [[3]]]) == [1, [2], [3]]


def test_flatten_once_empty_parts():
    assert flatten_once([[], [4], []]) == [4]


def test_running_max_simple():
    assert running_max([1, 3, 2, 5]) == [1, 3, 3, 5]


def test_running_max_negative():
    assert running_max([-3, -5, -1]) == [-3, -3, -1]


def test_running_max_empty():
    assert running_max([]) == []


def test_rotate_left_by_one():
    assert rotate_left([1, 2, 3, 4], 1) == [2, 3, 4, 1]


def test_rotate_left_wraps():
    assert rotate_left([1, 2, 3], 4) == [2, 3, 1]


def test_rotate_left_zero():
    assert rotate_left([1, 2, 3], 0) == [1, 2, 3]


def test_rotate_left_empty():
    assert rotate_left([], 3) == []


def test_dedupe_keeps_order():
    assert dedupe([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_dedupe_no_repeats():
    assert dedupe(["a", "b"]) == ["a", "b"]


def test_dedupe_empty():
    assert dedupe([]) == []


def test_pairwise_diffs_simple():
    assert pairwise_diffs([1, 4, 9]) == [3, 5]


def test_pairwise_diffs_decreasing():
    assert pairwise_diffs([5, 2]) == [-3]


def test_pairwise_diffs_short():
    assert pairwise_diffs([7]) == []


def test_index_of_found():
    assert index_of(["a", "b", "c"], "b") == 1


def test_index_of_first_occurrence():
    assert index_of([5, 6, 5], 5) == 0


def test_index_of_last_position():
    assert index_of([1, 2, 3], 3) == 2


def test_index_of_missing():
    assert index_of([1, 2], 9) == -1


def test_is_sorted_true():
    assert is_sorted([1, 2, 2, 5]) is True


def test_is_sorted_false():
    assert is_sorted([1, 3, 2]) is False


def test_is_sorted_false_at_start():
    assert is_sorted([4, 1, 2]) is False


def test_is_sorted_empty():
    assert is_sorted([]) is True


def test_binary_search_middle():
    assert binary_search([1, 3, 5, 7, 9], 5) == 2


def test_binary_search_ends():
    assert binary_search([1, 3, 5, 7, 9], 1) == 0
    assert binary_search([1, 3, 5, 7, 9], 9) == 4


def test_binary_search_missing():
    assert binary_search([1, 3, 5], 4) == -1


def test_binary_search_single():
    assert binary_search([8], 8) == 0


def test_second_largest_simple():
    assert second_largest([3, 9, 4]) == 4


def test_second_largest_duplicates():
    assert second_largest([5, 5, 2]) == 2


def test_second_largest_increasing():
    assert second_largest([1, 2, 3]) == 2


def test_second_largest_none():
    assert second_largest([7, 7]) is None


def test_count_matching_even():
    assert count_matching([1, 2, 3, 4], lambda x: x % 2 == 0) == 2


def test_count_matching_none():
    assert count_matching(["a"], lambda s: s == "b") == 0


def test_all_distinct_true():
    assert all_distinct([1, 2, 3]) is True


def test_all_distinct_false():
    assert all_distinct([1, 2, 1]) is False


def test_all_distinct_empty():
    assert all_distinct([]) is True


def test_take_while_positive_stops():
    assert take_while_positive([3, 1, 0, 5]) == [3, 1]


def test_take_while_positive_all():
    assert take_while_positive([2, 4]) == [2, 4]


def test_take_while_positive_none():
    assert take_while_positive([-1, 2]) == []

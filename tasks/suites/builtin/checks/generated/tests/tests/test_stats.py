import pytest

from minicalc.stats import (clamp_value, mean, median, most_common, moving_average, normalize_scores,
                            value_range, variance, weighted_mean)


def test_mean_of_three():
    assert mean([1, 2, 3]) == 2.0


def test_mean_of_two():
    assert mean([1, 2]) == 1.5


def test_mean_single_value():
    assert mean([7]) == 7.0


def test_mean_empty_is_zero():
    assert mean([]) == 0.0


def test_mean_negative_values():
    assert mean([-4, 2]) == -1.0


def test_median_odd_count():
    assert median([3, 1, 2]) == 2


def test_median_even_count():
    assert median([4, 1, 3, 2]) == 2.5


def test_median_single():
    assert median([5]) == 5


def test_median_unsorted_even():
    assert median([10, 2, 8, 4]) == 6.0


def test_median_empty_raises():
    with pytest.raises(ValueError):
        median([])


def test_variance_of_constant_is_zero():
    assert variance([3, 3, 3]) == 0.0


def test_variance_simple():
    assert variance([1, 3]) == 1.0


def test_variance_four_values():
    assert variance([2, 4, 4, 4, 5, 5, 7, 9]) == 4.0


def test_variance_single_value():
    assert variance([5]) == 0.0


def test_value_range_simple():
    assert value_range([3, 9, 4]) == 6


def test_value_range_negative():
    assert value_range([-5, -1]) == 4


def test_value_range_empty():
    assert value_range([]) == 0


def test_most_common_clear_winner():
    assert most_common([1, 2, 2, 3]) == 2


def test_most_common_tie_goes_to_first():
    assert most_common(["b", "a", "a", "b"]) == "b"


def test_most_common_single():
    assert most_common([4]) == 4


def test_most_common_empty():
    assert most_common([]) is None


def test_moving_average_width_two():
    assert moving_average([1, 3, 5, 7], 2) == [2.0, 4.0, 6.0]


def test_moving_average_width_three():
    assert moving_average([3, 6, 9, 12], 3) == [6.0, 9.0]


def test_moving_average_full_width():
    assert moving_average([2, 4], 2) == [3.0]


def test_moving_average_too_wide():
    assert moving_average([1, 2], 3) == []


def test_moving_average_bad_width():
    with pytest.raises(ValueError):
        moving_average([1, 2], 0)


def test_weighted_mean_equal_weights():
    assert weighted_mean([2, 4], [1, 1]) == 3.0


def test_weighted_mean_skewed():
    assert weighted_mean([10, 20], [3, 1]) == 12.5


def test_weighted_mean_length_mismatch():
    with pytest.raises(ValueError):
        weighted_mean([1, 2], [1])


def test_weighted_mean_zero_weights():
    with pytest.raises(ValueError):
        weighted_mean([1, 2], [0, 0])


def test_clamp_value_inside():
    assert clamp_value(5, 0, 10) == 5


def test_clamp_value_below():
    assert clamp_value(-3, 0, 10) == 0


def test_clamp_value_above():
    assert clamp_value(12, 0, 10) == 10


def test_clamp_value_at_bounds():
    assert clamp_value(10, 0, 10) == 10


def test_clamp_value_bad_range():
    with pytest.raises(ValueError):
        clamp_value(1, 5, 2)


def test_normalize_scores_simple():
    assert normalize_scores([0, 5, 10]) == [0.0, 0.5, 1.0]


def test_normalize_scores_shifted():
    assert normalize_scores([2, 4]) == [0.0, 1.0]


def test_normalize_scores_all_equal():
    assert normalize_scores([3, 3]) == [0.0, 0.0]


def test_normalize_scores_empty():
    assert normalize_scores([]) == []

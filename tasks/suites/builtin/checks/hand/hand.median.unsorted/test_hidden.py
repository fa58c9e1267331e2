from minicalc.stats import median


def test_median_unsorted_odd():
    assert median([9, 1, 5]) == 5


def test_median_reverse_even():
    assert median([8, 6, 4, 2]) == 5.0


def test_median_sorted_still_works():
    assert median([1, 2, 3, 4, 5]) == 3

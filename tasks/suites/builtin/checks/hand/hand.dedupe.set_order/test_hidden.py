from minicalc.sequences import dedupe


def test_dedupe_order_of_first_occurrence():
    assert dedupe([9, 2, 9, 5, 2, 1]) == [9, 2, 5, 1]


def test_dedupe_reverse_sorted_input():
    assert dedupe([5, 4, 3, 3]) == [5, 4, 3]


def test_dedupe_single():
    assert dedupe([7, 7, 7]) == [7]

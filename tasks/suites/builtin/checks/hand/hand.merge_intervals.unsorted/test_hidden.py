from minicalc.intervals import gaps_between, merge_intervals, total_covered


def test_merge_unsorted_overlapping():
    assert merge_intervals([(8, 10), (1, 3), (2, 6)]) == [(1, 6), (8, 10)]


def test_merge_reverse_order():
    assert merge_intervals([(20, 25), (10, 12), (1, 2)]) == [(1, 2), (10, 12), (20, 25)]


def test_total_covered_unsorted():
    assert total_covered([(5, 9), (1, 6)]) == 9


def test_gaps_unsorted():
    assert gaps_between([(7, 9), (1, 3)]) == [(4, 6)]

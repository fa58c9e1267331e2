from minicalc.intervals import (contains_point, gaps_between, interval_length, intersect_interval,
                                merge_intervals, overlaps, shift_interval, total_covered)


def test_overlaps_true():
    assert overlaps((1, 5), (4, 8)) is True


def test_overlaps_touching_endpoint():
    assert overlaps((1, 5), (5, 9)) is True


def test_overlaps_false():
    assert overlaps((1, 3), (4, 6)) is False


def test_overlaps_false_reversed():
    assert overlaps((7, 9), (1, 6)) is False


def test_overlaps_contained():
    assert overlaps((1, 10), (3, 4)) is True


def test_contains_point_inside():
    assert contains_point((2, 6), 4) is True


def test_contains_point_at_ends():
    assert contains_point((2, 6), 2) is True
    assert contains_point((2, 6), 6) is True


def test_contains_point_outside():
    assert contains_point((2, 6), 7) is False


def test_interval_length_simple():
    assert interval_length((3, 7)) == 5


def test_interval_length_single_point():
    assert interval_length((4, 4)) == 1


def test_intersect_interval_overlap():
    assert intersect_interval((1, 5), (3, 9)) == (3, 5)


def test_intersect_interval_contained():
    assert intersect_interval((1, 10), (4, 6)) == (4, 6)


def test_intersect_interval_single_point():
    assert intersect_interval((1, 4), (4, 8)) == (4, 4)


def test_intersect_interval_disjoint():
    assert intersect_interval((1, 2), (5, 6)) is None


def test_merge_intervals_overlapping():
    assert merge_intervals([(1, 3), (2, 6), (8, 10)]) == [(1, 6), (8, 10)]


def test_merge_intervals_touching():
    assert merge_intervals([(1, 2), (3, 4)]) == [(1, 4)]


def test_merge_intervals_unsorted():
    assert merge_intervals([(5, 7), (1, 2)]) == [(1, 2), (5, 7)]


def test_merge_intervals_nested():
    assert merge_intervals([(1, 10), (2, 3)]) == [(1, 10)]


def test_merge_intervals_empty():
    assert merge_intervals([]) == []


def test_total_covered_disjoint():
    assert total_covered([(1, 3), (10, 11)]) == 5


def test_total_covered_overlapping():
    assert total_covered([(1, 5), (3, 7)]) == 7


def test_total_covered_empty():
    assert total_covered([]) == 0


def test_gaps_between_two():
    assert gaps_between([(1, 3), (7, 9)]) == [(4, 6)]


def test_gaps_between_three():
    assert gaps_between([(10, 12), (1, 2), (5, 6)]) == [(3, 4), (7, 9)]


def test_gaps_between_none():
    assert gaps_between([(1, 4), (5, 6)]) == []


def test_shift_interval_forward():
    assert shift_interval((1, 3), 4) == (5, 7)


def test_shift_interval_backward():
    assert shift_interval((5, 9), -5) == (0, 4)

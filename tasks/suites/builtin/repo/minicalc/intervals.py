"""Closed integer intervals as (start, end) tuples with start <= end."""


def overlaps(a, b):
    """True when two closed intervals share at least one point."""
    return a[0] <= b[1] and b[0] <= a[1]


def contains_point(interval, x):
    """True when x lies in the closed interval."""
    return interval[0] <= x <= interval[1]


def interval_length(interval):
    """Number of integers in the closed interval."""
    return interval[1] - interval[0] + 1


def intersect_interval(a, b):
    """The common part of two intervals, or None when they do not overlap."""
    start = max(a[0], b[0])
    end = min(a[1], b[1])
    if start > end:
        return None
    return (start, end)


def merge_intervals(intervals):
    """Sorted union of intervals; touching ones ((1, 2) and (3, 4)) are merged too."""
    result = []
    for start, end in sorted(intervals):
        if result and start <= result[-1][1] + 1:
            result[-1] = (result[-1][0], max(result[-1][1], end))
        else:
            result.append((start, end))
    return result


def total_covered(intervals):
    """Number of distinct integers covered by any of the intervals."""
    total = 0
    for start, end in merge_intervals(intervals):
        total += end - start + 1
    return total


def gaps_between(intervals):
    """The uncovered intervals between the merged intervals, in order."""
    merged = merge_intervals(intervals)
    gaps = []
    for i in range(1, len(merged)):
        gaps.append((merged[i - 1][1] + 1, merged[i][0] - 1))
    return gaps


def shift_interval(interval, offset):
    """The interval moved by `offset`."""
    return (interval[0] + offset, interval[1] + offset)

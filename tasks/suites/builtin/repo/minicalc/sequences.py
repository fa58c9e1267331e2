"""Operations on lists."""


def chunked(items, size):
    """Consecutive pieces of `size` items (the last one may be shorter)."""
    if size < 1:
        raise ValueError("size must be at least 1")
    return [items[i:i + size] for i in range(0, len(items), size)]


def flatten_once(nested):
    """One level of nesting removed: [[1, 2], [3]] -> [1, 2, 3]."""
    flat = []
    for part in nested:
        flat.extend(part)
    return flat


def running_max(values):
    """Maximum of each prefix: [1, 3, 2] -> [1, 3, 3]."""
    out = []
    best = float("-inf")
    for v in values:
        best = max(best, v)
        out.append(best)
    return out


def rotate_left(items, k):
    """Items rotated left by k places (k may exceed the length)."""
    if not items:
        return []
    k = k % len(items)
    return items[k:] + items[:k]


def dedupe(items):
    """Items without repeats, first occurrences kept in order."""
    seen = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def pairwise_diffs(values):
    """Differences of neighbours: [1, 4, 9] -> [3, 5]."""
    return [values[i + 1] - values[i] for i in range(len(values) - 1)]


def index_of(items, target):
    """Index of the first item equal to target, or -1."""
    for i in range(len(items)):
        if items[i] == target:
            return i
    return -1


def is_sorted(values):
    """True when values never decrease."""
    for i in range(1, len(values)):
        if values[i - 1] > values[i]:
            return False
    return True


def binary_search(values, target):
    """Index of target in the sorted list `values`, or -1."""
    lo = 0
    hi = len(values) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if values[mid] == target:
            return mid
        if values[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


def second_largest(values):
    """The second largest distinct value, or None when there is none."""
    first = None
    second = None
    for v in values:
        if first is None or v > first:
            if first is not None:
                second = first
            first = v
        elif v != first and (second is None or v > second):
            second = v
    return second


def count_matching(items, predicate):
    """How many items satisfy predicate."""
    count = 0
    for item in items:
        if predicate(item):
            count += 1
    return count


def all_distinct(items):
    """True when no item repeats."""
    seen = set()
    for item in items:
        if item in seen:
            return False
        seen.add(item)
    return True


def take_while_positive(values):
    """The leading values that are > 0."""
    out = []
    for v in values:
        if not v > 0:
            break
        out.append(v)
    return out

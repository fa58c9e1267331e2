"""Descriptive statistics over lists of numbers."""


def mean(values):
    """Arithmetic mean; 0.0 for an empty list."""
    if not values:
        return 0.0
    total = 0
    for v in values:
        total += v
    return total / len(values)


def median(values):
    """Middle value of the sorted data (mean of the two middle values for an even count)."""
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def variance(values):
    """Population variance; 0.0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    centre = mean(values)
    acc = 0.0
    for v in values:
        acc += (v - centre) ** 2
    return acc / len(values)


def value_range(values):
    """Largest minus smallest value; 0 for an empty list."""
    if not values:
        return 0
    return max(values) - min(values)


def most_common(values):
    """The most frequent value; ties go to the value seen first."""
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    best = None
    best_count = 0
    for v in values:
        if counts[v] > best_count:
            best = v
            best_count = counts[v]
    return best


def moving_average(values, width):
    """Means of each window of `width` consecutive values."""
    if width <= 0:
        raise ValueError("width must be positive")
    out = []
    for i in range(len(values) - width + 1):
        out.append(sum(values[i:i + width]) / width)
    return out


def weighted_mean(values, weights):
    """Sum of value*weight divided by the sum of weights."""
    if len(values) != len(weights):
        raise ValueError("values and weights differ in length")
    total_weight = sum(weights)
    if total_weight == 0:
        raise ValueError("weights sum to zero")
    acc = 0
    for v, w in zip(values, weights):
        acc += v * w
    return acc / total_weight


def clamp_value(x, low, high):
    """x limited to the closed range [low, high]."""
    if low > high:
        raise ValueError("low is above high")
    return max(low, min(x, high))


def normalize_scores(values):
    """Rescale values linearly to [0, 1]; all zeros when every value is equal."""
    if not values:
        return []
    lo = min(values)
    hi = max(values)
    if hi == lo:
        return [0.0 for _ in values]
    return [(v - lo) / (hi - lo) for v in values]

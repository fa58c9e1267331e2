# Quick checks of every function (the agent's `test` tool runs these).
from gym.lists import *  # noqa: F403
from gym.numbers import *  # noqa: F403
from gym.ranges import *  # noqa: F403
from gym.scores import *  # noqa: F403
from gym.strings import *  # noqa: F403


def test_peak():
    assert peak(1, 5, 3) == 5


def test_twice_bigger():
    assert twice_bigger(2, 7) == 14


def test_largest():
    assert largest([3, 8, 1]) == 8


def test_floor_all():
    assert floor_all([1, 5, -2], 0) == [1, 5, 0]


def test_longest_word():
    assert longest_word(['a', 'abc', 'ab']) == 3


def test_best_score():
    assert best_score([4, 9, 2]) == 9


def test_at_least():
    assert at_least(5, 5) == True


def test_keep_from():
    assert keep_from([1, 2, 3, 4], 3) == [3, 4]


def test_grade():
    assert grade(18) == 'adult'


def test_all_positive():
    assert all_positive([0, 1, 2]) == True


def test_higher():
    assert higher(3, 3) == 'first'


def test_reach():
    assert reach([1, 4], 4) == True


def test_triangle():
    assert triangle(4) == 10


def test_squares_upto():
    assert squares_upto(3) == [0, 1, 4, 9]


def test_labels_upto():
    assert labels_upto(2) == ['0', '1', '2']


def test_multiples_upto():
    assert multiples_upto(3, 5) == [0, 5, 10, 15]


def test_count_upto():
    assert count_upto(3) == [0, 1, 2, 3]


def test_sum_upto():
    assert sum_upto(5) == 15


def test_total_of():
    assert total_of([1, 2, 3]) == 6


def test_letter_count():
    assert letter_count(['ab', 'c']) == 3


def test_count_of():
    assert count_of(['a', 'b', 'a'], 'a') == 2


def test_sum_squares():
    assert sum_squares([1, 2, 3]) == 14


def test_weighted_total():
    assert weighted_total([5, 5, 5]) == 15


def test_values_total():
    assert values_total({'a': 2, 'b': 3}) == 5


def test_plus():
    assert plus(2, 3) == 5


def test_with_tax():
    assert with_tax(100, 0.5) == 150.0


def test_shift_all():
    assert shift_all([1, 2], 3) == [4, 5]


def test_full_name():
    assert full_name('Ada', 'Lovelace') == 'Ada Lovelace'


def test_add_points():
    assert add_points((1, 2), (3, 4)) == (4, 6)


def test_next_odd():
    assert next_odd(3) == 7

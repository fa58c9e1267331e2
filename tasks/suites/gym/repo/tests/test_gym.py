# Quick checks of every function (the agent's `test` tool runs these).
from gym.lists import *  # noqa: F403
from gym.numbers import *  # noqa: F403
from gym.ranges import *  # noqa: F403
from gym.scores import *  # noqa: F403
from gym.strings import *  # noqa: F403


def test_triangle():
    assert triangle(4) == 10
    assert triangle(1) == 1


def test_capped():
    assert capped(2, 3, 5) == 0
    assert capped(1, 1, 5) == 2


def test_peak_sum():
    assert peak_sum(1, 5, 3) == 8
    assert peak_sum(9, 2, 4) == 13


def test_at_least_sum():
    assert at_least_sum(2, 3, 5) == True
    assert at_least_sum(4, 1, 4) == True


def test_count_steps():
    assert count_steps(4) == 3
    assert count_steps(2) == 1


def test_bigger_double():
    assert bigger_double(2, 7) == 15
    assert bigger_double(9, 1) == 19


def test_top_total():
    assert top_total([1, 2, 3, 4], 3) == 7
    assert top_total([5, 5, 1], 5) == 10


def test_shift_max():
    assert shift_max([1, -5, 2], 3) == [4, 0, 5]
    assert shift_max([0, 4], 1) == [1, 5]


def test_squares_upto():
    assert squares_upto(3) == [1, 2, 5, 10]
    assert squares_upto(0) == [1]


def test_keep_big():
    assert keep_big([1, 2, 3, 4], 2) == [3, 4]
    assert keep_big([5, 6, 1], 5) == [6]


def test_total_of():
    assert total_of([1, 2, 3]) == 6
    assert total_of([10, 4]) == 14


def test_floor_all():
    assert floor_all([1, 5, 0], 2) == [2, 5, 2]
    assert floor_all([3, 7], 4) == [4, 7]


def test_longest_len():
    assert longest_len(['a', 'abc', 'ab']) == 3
    assert longest_len(['', '']) == 0


def test_grade():
    assert grade(16, 2) == 'adult'
    assert grade(10, 1) == 'minor'


def test_labels_upto():
    assert labels_upto(2) == ['1', '2', '3']
    assert labels_upto(0) == ['1']


def test_letter_count():
    assert letter_count(['ab', 'c', '']) == 4
    assert letter_count(['hello', 'world']) == 10


def test_first_words():
    assert first_words(['a', 'b', 'c', 'd'], 1) == 'a b.'
    assert first_words(['x', 'y', 'z'], 2) == 'x y z.'


def test_count_long():
    assert count_long(['ab', 'abc', 'a'], 2) == 2
    assert count_long(['hello', 'hi'], 5) == 1


def test_best_score():
    assert best_score([4, 9, 2], 1) == 10
    assert best_score([1, 1, 7], 0) == 7


def test_all_pass():
    assert all_pass([1, 2], 2) == True
    assert all_pass([3, 4], 5) == False


def test_multiples_upto():
    assert multiples_upto(3, 5) == [1, 5, 10, 15]
    assert multiples_upto(0, 2) == [1]


def test_sum_squares():
    assert sum_squares([1, -2, 3]) == 10
    assert sum_squares([]) == 0


def test_add_points():
    assert add_points((1, 2), (3, 4)) == (3, 6)
    assert add_points((5, 0), (0, 6)) == (5, 6)


def test_higher():
    assert higher(3, 5, 2) == 'first'
    assert higher(1, 4, 1) == 'second'


def test_count_upto():
    assert count_upto(3) == [1, 1, 2, 3]
    assert count_upto(0) == [1]


def test_sum_upto():
    assert sum_upto(3) == 14
    assert sum_upto(1) == 1


def test_weighted_total():
    assert weighted_total(3) == 7
    assert weighted_total(0) == 1


def test_next_odd():
    assert next_odd(3) == 7
    assert next_odd(-2) == 1


def test_values_total():
    assert values_total({'a': 2, 'b': 3}, 3) == 3
    assert values_total({}, 0) == 0


def test_reach():
    assert reach([1, 2], 4, 2) == True
    assert reach([6], 7, 0) == False

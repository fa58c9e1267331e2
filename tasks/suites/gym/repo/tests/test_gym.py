# Quick checks of every function (the agent's `test` tool runs these).
from gym.bakery import *  # noqa: F403
from gym.canyon import *  # noqa: F403
from gym.castle import *  # noqa: F403
from gym.cellar import *  # noqa: F403
from gym.forest import *  # noqa: F403
from gym.garden import *  # noqa: F403
from gym.harbor import *  # noqa: F403
from gym.island import *  # noqa: F403
from gym.kitchen import *  # noqa: F403
from gym.library import *  # noqa: F403
from gym.lists import *  # noqa: F403
from gym.market import *  # noqa: F403
from gym.meadow import *  # noqa: F403
from gym.museum import *  # noqa: F403
from gym.numbers import *  # noqa: F403
from gym.orchard import *  # noqa: F403
from gym.quarry import *  # noqa: F403
from gym.ranges import *  # noqa: F403
from gym.scores import *  # noqa: F403
from gym.station import *  # noqa: F403
from gym.strings import *  # noqa: F403
from gym.theater import *  # noqa: F403
from gym.tunnel import *  # noqa: F403
from gym.valley import *  # noqa: F403
from gym.village import *  # noqa: F403


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


def test_merge_pegs():
    assert merge_pegs(6, 4) == 28
    assert merge_pegs(2, 1) == 3


def test_clip_laps():
    assert clip_laps(4, 5) == 5
    assert clip_laps(2, 1) == 6


def test_blend_gems():
    assert blend_gems(-1, 1, 6) == 0
    assert blend_gems(3, 6, 0) == 6


def test_count_cells():
    assert count_cells(5, 0) == 0
    assert count_cells(4, 2) == 14


def test_score_rows():
    assert score_rows(1, 2, 3) == 4
    assert score_rows(6, 5, 6) == 10


def test_stack_rungs():
    assert stack_rungs([1], 4) == 4
    assert stack_rungs([4, 0, 4, 2], 4) == 12


def test_sum_notes():
    assert sum_notes(2, 1) == 4
    assert sum_notes(3, 2) == 4


def test_score_points():
    assert score_points([2, 6], 5) == 7
    assert score_points([-1, 0, 4, 1], 2) == 7


def test_mark_rungs():
    assert mark_rungs(2, 6) == 18
    assert mark_rungs(5, 1) == 7


def test_trim_rungs():
    assert trim_rungs([-2, 0, 3, 3], 3) == 9
    assert trim_rungs([0, 3, -2], 6) == 9


def test_count_rows():
    assert count_rows([1, 5, 6, 0], 4) == 30
    assert count_rows([3, 5, 3, 4], 4) == 26


def test_mark_cells():
    assert mark_cells([3, 6, -2, 5], 2) == 15
    assert mark_cells([3], 3) == 4


def test_trim_pegs():
    assert trim_pegs(4, 0) == 10
    assert trim_pegs(1, 2) == 5


def test_weigh_cells():
    assert weigh_cells([3], 1) == 5
    assert weigh_cells([6, -1, 6, -1], 6) == 25


def test_pick_beads():
    assert pick_beads([-2, -2], 5) == 11
    assert pick_beads([-1], 5) == 9


def test_stack_boxes():
    assert stack_boxes(5, 3) == [2, 3, 4, 5, 3]
    assert stack_boxes(4, 6) == [3, 4, 6]


def test_pick_marks():
    assert pick_marks([5], 1) == 2
    assert pick_marks([3, 2], 3) == 2


def test_count_keys():
    assert count_keys(1, 1) == 0
    assert count_keys(2, 3) == 3


def test_merge_points():
    assert merge_points([0, 0], 5) == 0
    assert merge_points([-1, 3, -1], 0) == 6


def test_sum_beads():
    assert sum_beads(4, 6) == 24
    assert sum_beads(3, 1) == 4


def test_blend_boxes():
    assert blend_boxes(2, 3) == 3
    assert blend_boxes(5, 1) == 0


def test_count_coins():
    assert count_coins(1, 1, 6) == 2
    assert count_coins(-1, 3, 2) == 2


def test_scan_steps():
    assert scan_steps(2, 5) == 3
    assert scan_steps(5, 1) == 0


def test_merge_pages():
    assert merge_pages(-1, -1) == []
    assert merge_pages(6, 6) == [9, 10, 11, 12]


def test_stack_marks():
    assert stack_marks(6, 6) == 3
    assert stack_marks(1, 6) == 1


def test_measure_beads():
    assert measure_beads(1, 0) == [1, 1]
    assert measure_beads(-1, 4) == []


def test_fold_pegs():
    assert fold_pegs(3, 4) == [4, 9, 4]
    assert fold_pegs(1, 6) == [6]


def test_rank_notes():
    assert rank_notes(2, 6, -1) == 12
    assert rank_notes(2, 0, 2) == 0


def test_fold_marks():
    assert fold_marks(1, 5) == 1
    assert fold_marks(5, 1) == 0


def test_measure_boxes():
    assert measure_boxes([-1, 0], 6) == 1
    assert measure_boxes([0, 0, 3], 1) == 7


def test_merge_keys():
    assert merge_keys(0, 4) == [0, 4]
    assert merge_keys(3, 3) == [0, 1, 4, 9, 3]


def test_sum_chips():
    assert sum_chips([5, 4, -2], 4) == 13
    assert sum_chips([], -1) == -1


def test_scan_bolts():
    assert scan_bolts(1, 3) == 1
    assert scan_bolts(4, 6) == 6


def test_stack_pages():
    assert stack_pages(2, 0) == 3
    assert stack_pages(5, 5) == 30


def test_count_chips():
    assert count_chips(2, 2) == 1
    assert count_chips(1, 3) == 1


def test_mark_beads():
    assert mark_beads(1, 5) == 1
    assert mark_beads(3, 2) == 1


def test_bound_beads():
    assert bound_beads(3, -1, 5) == 5
    assert bound_beads(-1, 4, 3) == 8


def test_clip_chips():
    assert clip_chips(0, 4, 5) == 5
    assert clip_chips(0, 1, -1) == -1


def test_count_points():
    assert count_points(2, 0) == [0, 0, 0, 0]
    assert count_points(3, -1) == [0, -1, -2, -3, -1]


def test_fold_pages():
    assert fold_pages(5, 3) == 6
    assert fold_pages(4, 3) == 6


def test_lift_rungs():
    assert lift_rungs([6, 1, -2], 6) == 1
    assert lift_rungs([-1, 1, -1], 2) == 1


def test_tally_notes():
    assert tally_notes(6, 2) == 1
    assert tally_notes(3, 5) == 6


def test_sum_points():
    assert sum_points(4, 0, 4) == 8
    assert sum_points(-1, 5, 5) == 10


def test_merge_marks():
    assert merge_marks(0, 2) == 0
    assert merge_marks(3, 6) == 3


def test_rank_gems():
    assert rank_gems([], 4) == 4
    assert rank_gems([5, 2, 0, -1], 0) == 4


def test_gather_keys():
    assert gather_keys(6, 3) == 1
    assert gather_keys(2, 5) == 3


def test_rank_coins():
    assert rank_coins(3, 1) == 7
    assert rank_coins(3, 2) == 8


def test_measure_steps():
    assert measure_steps(1, 4) == [4]
    assert measure_steps(4, 2) == [2, 2, 4]


def test_trim_beads():
    assert trim_beads(2, 2) == 4
    assert trim_beads(1, 6) == 6


def test_gather_pegs():
    assert gather_pegs([6, 0, -2, -1], -1) == 8
    assert gather_pegs([0, 1, 3], -1) == 8


def test_tally_marks():
    assert tally_marks(5, 3) == 1
    assert tally_marks(2, 4) == 3


def test_pick_pages():
    assert pick_pages(3, 5, 5) == 5
    assert pick_pages(1, -1, 3) == 4


def test_tally_beads():
    assert tally_beads(2, 1) == 0
    assert tally_beads(2, 4) == 3


def test_trim_boxes():
    assert trim_boxes(0, 0) == 0
    assert trim_boxes(2, -1) == -1


def test_count_marks():
    assert count_marks([6, 0, -2], -1) == 3
    assert count_marks([0, -2, 1], 5) == 5


def test_weigh_bolts():
    assert weigh_bolts(4, 5, 4) == 6
    assert weigh_bolts(-1, -1, 4) == -2


def test_score_keys():
    assert score_keys(4, 5, 0) == 20
    assert score_keys(3, 3, 4) == 4


def test_lift_keys():
    assert lift_keys(6, 6) == 182
    assert lift_keys(4, 1) == 60


def test_grow_stars():
    assert grow_stars(4, 2) == [2, 2, 2, 3, 4]
    assert grow_stars(0, 2) == [2]


def test_bound_gems():
    assert bound_gems(0, 2, 0) == 0
    assert bound_gems(5, -1, 5) == 5


def test_fold_points():
    assert fold_points([4], 6) == 0
    assert fold_points([0, 4, 6], 5) == 10


def test_bound_bolts():
    assert bound_bolts(0, -1) == 0
    assert bound_bolts(1, 2) == 1


def test_scan_pegs():
    assert scan_pegs(3, 3) == 1
    assert scan_pegs(1, 5) == 1


def test_bound_stars():
    assert bound_stars(4, 6, -1) == 12
    assert bound_stars(6, -1, 5) == -2


def test_mark_laps():
    assert mark_laps(-1, 5, 5) == 10
    assert mark_laps(3, -1, 5) == 0


def test_clip_cells():
    assert clip_cells(1, 3) == 1
    assert clip_cells(2, 3) == 1


def test_trim_cells():
    assert trim_cells(3, 1) == 0
    assert trim_cells(3, 4) == 6


def test_pick_coins():
    assert pick_coins(6, 6, 6) == 12
    assert pick_coins(2, 4, -1) == 3


def test_stack_tiles():
    assert stack_tiles(6, 2) == 26
    assert stack_tiles(6, 1) == 23


def test_measure_gems():
    assert measure_gems([6, 2, 6, 5], 5) == 33
    assert measure_gems([6, 3], 5) == 12


def test_grow_notes():
    assert grow_notes(5, 1) == 0
    assert grow_notes(1, 6) == 1


def test_blend_steps():
    assert blend_steps(1, 3) == 1
    assert blend_steps(6, 3) == 1


def test_rank_bolts():
    assert rank_bolts(5, 2) == 57
    assert rank_bolts(0, 5) == 5


def test_clip_stars():
    assert clip_stars([0], 5) == 0
    assert clip_stars([1, 5], 2) == 4


def test_grow_tiles():
    assert grow_tiles(5, 0) == 0
    assert grow_tiles(4, 5) == 50


def test_bound_pegs():
    assert bound_pegs(3, 2, 4) == 7
    assert bound_pegs(1, 2, 1) == 3


def test_blend_pegs():
    assert blend_pegs([4, -2], -1) == 8
    assert blend_pegs([6, 1, 1, 6], 1) == 28


def test_mark_tiles():
    assert mark_tiles(1, 1) == 0
    assert mark_tiles(2, 5) == 3


def test_fold_beads():
    assert fold_beads([4, 6], 1) == 3
    assert fold_beads([5, 2], 2) == 3


def test_grow_rungs():
    assert grow_rungs(5, 0, 2) == 7
    assert grow_rungs(4, 0, 4) == 8


def test_scan_stars():
    assert scan_stars(3, 3) == 1
    assert scan_stars(1, 2) == 1


def test_pick_gems():
    assert pick_gems(2, 5) == 3
    assert pick_gems(4, 6) == 6


def test_sum_rows():
    assert sum_rows(1, 5, 1) == 6
    assert sum_rows(0, 4, 4) == 8


def test_merge_notes():
    assert merge_notes(4, 4, 4) == 4
    assert merge_notes(-1, -1, 4) == 1


def test_pick_seeds():
    assert pick_seeds(2, 3) == 3
    assert pick_seeds(4, 1) == 0


def test_merge_coins():
    assert merge_coins(2, 4) == 3
    assert merge_coins(4, 1) == 0


def test_fold_coins():
    assert fold_coins(2, 0, 5) == 1
    assert fold_coins(6, 6, 6) == 12


def test_grow_boxes():
    assert grow_boxes(2, 6) == 3
    assert grow_boxes(2, 1) == 0


def test_sum_pages():
    assert sum_pages([4, 4, 6], 2) == 15
    assert sum_pages([-2, 1], 1) == 2


def test_weigh_coins():
    assert weigh_coins(2, 4) == 0
    assert weigh_coins(6, 5) == 122


def test_lift_beads():
    assert lift_beads(5, 1) == 0
    assert lift_beads(2, 4) == 3


def test_measure_pegs():
    assert measure_pegs([4, 1], 0) == 5
    assert measure_pegs([1, 5, 6], 2) == 18


def test_scan_rows():
    assert scan_rows(3, 1) == 0
    assert scan_rows(1, 2) == 1


def test_score_gems():
    assert score_gems(5, 6, 2) == 7
    assert score_gems(1, 2, 3) == 4


def test_mark_rows():
    assert mark_rows(2, 4) == 3
    assert mark_rows(4, 1) == 0


def test_grow_steps():
    assert grow_steps(3, 2) == 1
    assert grow_steps(1, 3) == 1


def test_mark_pages():
    assert mark_pages([0, 5, -1, -1], 6) == 12
    assert mark_pages([3], 6) == 10


def test_sum_marks():
    assert sum_marks(6, 2, 6) == 6
    assert sum_marks(2, 0, 4) == 6


def test_lift_marks():
    assert lift_marks(2, 1) == 2
    assert lift_marks(3, 2) == 3


def test_blend_laps():
    assert blend_laps(0, 2, 1) == 3
    assert blend_laps(3, 3, -1) == -1

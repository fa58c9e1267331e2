from minicalc.grids import (column_max, count_cells_above, grid_trace, is_square, neighbours, row_sums,
                            transpose)


def test_transpose_rectangular():
    assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]


def test_transpose_square():
    assert transpose([[1, 2], [3, 4]]) == [[1, 3], [2, 4]]


def test_transpose_empty():
    assert transpose([]) == []


def test_grid_trace_square():
    assert grid_trace([[1, 2], [3, 4]]) == 5


def test_grid_trace_three():
    assert grid_trace([[1, 0, 0], [0, 2, 0], [0, 0, 3]]) == 6


def test_neighbours_corner():
    assert neighbours([[1, 2], [3, 4]], 0, 0) == [3, 2]


def test_neighbours_centre():
    assert neighbours([[1, 2, 3], [4, 5, 6], [7, 8, 9]], 1, 1) == [2, 8, 4, 6]


def test_neighbours_bottom_right():
    assert neighbours([[1, 2], [3, 4]], 1, 1) == [2, 3]


def test_row_sums_simple():
    assert row_sums([[1, 2], [3, 4]]) == [3, 7]


def test_row_sums_empty_row():
    assert row_sums([[], [5]]) == [0, 5]


def test_column_max_first_column():
    assert column_max([[1, 9], [4, 2], [3, 3]], 0) == 4


def test_column_max_second_column():
    assert column_max([[1, 9], [4, 2]], 1) == 9


def test_column_max_last_row():
    assert column_max([[1], [2], [8]], 0) == 8


def test_count_cells_above_some():
    assert count_cells_above([[1, 5], [7, 3]], 3) == 2


def test_count_cells_above_strict():
    assert count_cells_above([[3, 3]], 3) == 0


def test_is_square_true():
    assert is_square([[1, 2], [3, 4]]) is True


def test_is_square_false():
    assert is_square([[1, 2, 3], [4, 5, 6]]) is False


def test_is_square_empty():
    assert is_square([]) is True

"""Grids as lists of equal-length rows."""


def transpose(grid):
    """Rows become columns."""
    if not grid:
        return []
    return [[row[c] for row in grid] for c in range(len(grid[0]))]


def grid_trace(grid):
    """Sum of the main diagonal of a square grid."""
    total = 0
    for i in range(len(grid)):
        total += grid[i][i]
    return total


def neighbours(grid, r, c):
    """Values of the up-to-4 orthogonal neighbours of cell (r, c), in order up, down, left, right."""
    out = []
    for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        nr, nc = r + dr, c + dc
        if 0 <= nr < len(grid) and 0 <= nc < len(grid[0]):
            out.append(grid[nr][nc])
    return out


def row_sums(grid):
    """Sum of each row."""
    return [sum(row) for row in grid]


def column_max(grid, c):
    """Largest value in column c."""
    best = grid[0][c]
    for row in grid[1:]:
        if row[c] > best:
            best = row[c]
    return best


def count_cells_above(grid, threshold):
    """Number of cells strictly above threshold."""
    count = 0
    for row in grid:
        for value in row:
            if value > threshold:
                count += 1
    return count


def is_square(grid):
    """True when the grid has as many rows as columns (an empty grid is square)."""
    return all(len(row) == len(grid) for row in grid)

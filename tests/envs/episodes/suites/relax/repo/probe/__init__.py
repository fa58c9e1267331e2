"""Small helpers: counting, names, tags."""

"""Small helpers: ports."""

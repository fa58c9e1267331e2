"""A small word store."""

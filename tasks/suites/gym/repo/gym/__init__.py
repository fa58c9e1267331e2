"""A small library of one-idea functions: the repository of fixrl's `gym` suite."""

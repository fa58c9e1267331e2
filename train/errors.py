"""The training layer's errors: bad input a run reports with a message that says what to do (the
command line prints it and exits with status 2). A module of their own, free of torch, so that
the command line can name them without loading what raises them."""
from __future__ import annotations


class RunError(ValueError):
    """A run directory that cannot be started or resumed (the message says what to do)."""


class ModelError(ValueError):
    """A model or adapter directory that cannot be used (the message says why and what to do)."""


class DataError(ValueError):
    """A data file that cannot be used; the message names the file, the line and the field."""

"""The one error every `fixrl bench` raises for input it cannot run with."""
from __future__ import annotations


class BenchError(ValueError):
    """A benchmark that cannot run as asked (the message names the setting); every `fixrl bench`
    raises this one."""

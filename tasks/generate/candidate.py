"""A candidate: one mutant of one function, and what testing it decided. The search
(`tasks.generate.search`) sets its status and, for a kept bug, the tests it breaks; the later
stages only read it.

What this does not guarantee: that `status` is final before the search has run."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from fixrl.tasks.generate.issue import Failure
from fixrl.tasks.generate.mutate import Mutant

TESTED = ("kept", "equivalent", "not_local", "timeout", "error")
"""The statuses of a candidate whose tests ran."""


@dataclass
class Candidate:
    file: str
    qualname: str
    name: str
    mutant: Mutant
    status: str = "untested"
    """untested | kept | equivalent | not_local | timeout | error | uncovered | capped"""
    broken: list[str] = field(default_factory=list)
    """Tests the bug breaks (from the whole-suite run of a kept bug)."""
    failures: dict[str, Failure] = field(default_factory=dict)
    records: dict[str, dict] = field(default_factory=dict)
    """The generator plugin's record of each broken test (the failure its issue text reads)."""
    select: frozenset[str] | None = None
    """The tests its selected run runs (stable ones only); None: the whole suite."""

    @property
    def function(self) -> str:
        return f"{self.file}::{self.qualname}"

    @property
    def key(self) -> str:
        """Names the candidate in the journal: its function, family, site and text."""
        digest = hashlib.sha256(self.mutant.source.encode()).hexdigest()[:16]
        return f"{self.function}::{self.mutant.op}::{self.mutant.lineno}::{digest}"

"""The issue writer's records: a failing test as the generator's plugin reports it, what it
shows (`Symptom`) or why it shows nothing (`Dropped`), and the function the bug is in."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Failure:
    """One failing test as the generator's pytest plugin reports it."""

    nodeid: str
    message: str = ""
    """pytest's crash message: the exception line, with assertion introspection for asserts."""
    entries: list[tuple[str, int]] = field(default_factory=list)
    """Traceback (path relative to the repository, 1-based line), outermost first."""
    detail: dict | None = None
    """What the test saw (`tasks.generate.failure_capture.capture`), or None when it was not captured."""

    @classmethod
    def from_record(cls, nodeid: str, record: dict) -> Failure:
        """From one test's entry in the plugin's JSON report."""
        detail = record.get("detail")
        return cls(nodeid, record.get("message", "") or "", [tuple(e) for e in record.get("entries", [])],
                   detail if isinstance(detail, dict) else None)


@dataclass(frozen=True)
class Symptom:
    """What one failing test shows, in a user's words."""

    call: str
    """The expression shown, with values: `inflection.singularize('children')`."""
    api: str
    """The package's function as the test names it (`inflection.singularize`)."""
    callee: str
    """Its bare name (`singularize`)."""
    file: str
    """The file defining it, '' when unknown."""
    text: str
    """One sentence: what happened against what was expected."""
    context: tuple[str, ...] = ()
    """Setup statements (`mf = memoize(f)`) and definitions of the test's helpers it needs."""


@dataclass(frozen=True)
class Dropped:
    """A failing test that gives no symptom, and why."""

    reason: str


@dataclass(frozen=True)
class Target:
    """The function the bug is in: symptoms that call it come first."""

    name: str
    file: str


class Unshowable(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


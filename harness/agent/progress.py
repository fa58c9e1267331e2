"""Steps: the progress of one long step of a command (validate, rollout, eval, an environment
build, workers starting), readable on a terminal and in a log file alike.

    with Steps("eval", total=16, unit="episodes", fields={"passed": 0}) as steps:
        steps.advance(passed=3)        # one more done; a field's new value
        steps.note("worker ready")    # a line above the bar (or a plain line)

On a terminal (of `stream`, default stderr, or of the `console` given, whose other output then
prints above the bar) a rich bar. Elsewhere (a file, a pipe, CI) plain lines
`eval: 3/16 episodes, passed 3, 12 s`: at the start, at the first thing done, then at most one
every `every` seconds (from a thread of its own, so a step that waits long still shows it is
alive), and at the end: a log shows that something moves without growing a line an episode.
A step with no known total (`total=None`) counts without a bar. The counts are what the caller
reports; nothing here knows whether the work itself progresses.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

EVERY_SECONDS = 10.0
"""Least seconds between two plain lines."""


class Steps:
    """One step's progress (see the module docstring); a context manager."""

    def __init__(self, label: str, total: int | None = None, *, unit: str = "", fields: dict[str, Any] | None = None,
                 stream: TextIO | None = None, every: float = EVERY_SECONDS, enabled: bool = True,
                 console: Console | None = None) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.fields = dict(fields or {})
        self.done = 0
        self.every = every
        self.enabled = enabled
        self._console = console or Console(file=stream or sys.stderr, highlight=False)
        self._stream = self._console.file
        self._t0 = time.monotonic()
        self._last: float | None = None
        self._said = -1
        """`done` as the last plain line said it."""
        self._bar: Progress | None = None
        self._task: Any = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._beat: threading.Thread | None = None

    @property
    def on_terminal(self) -> bool:
        return self._console.is_terminal

    def start(self) -> Steps:
        self._t0 = time.monotonic()
        if self.enabled and self.on_terminal:
            self._bar = Progress(TextColumn(f"[bold]{self.label}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[extra]}"), TimeElapsedColumn(), console=self._console,
                                 transient=False)
            self._task = self._bar.add_task(self.label, total=self.total, extra=self._fields_text())
            self._bar.start()
        elif self.enabled:
            self._line(force=True)
            self._beat = threading.Thread(target=self._heartbeat, name=f"progress-{self.label}", daemon=True)
            self._beat.start()
        return self

    def _heartbeat(self) -> None:
        while not self._stopped.wait(min(1.0, self.every)):
            self._line()

    def advance(self, n: int = 1, **fields: Any) -> None:
        """`n` more done; `fields` their new values."""
        self.done += n
        self.fields.update(fields)
        if self._bar is not None:
            self._bar.update(self._task, advance=n, extra=self._fields_text())
        elif self.enabled:   # the first one too: a log shows the step has begun to finish things
            self._line(force=self.done == n or (self.total is not None and self.done >= self.total))

    def note(self, text: str) -> None:
        """A message of the step, on a line of its own."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.console.print(text, markup=False)
        else:
            print(text, file=self._stream, flush=True)

    def stop(self) -> None:
        self._stopped.set()
        if self._beat is not None:
            self._beat.join()
            self._beat = None
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self.enabled and self._said != self.done:   # where it ended, once
            self._line(force=True)

    def line(self) -> str:
        """The plain line for where the step stands now."""
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        extra = self._fields_text()
        return (f"{self.label}: {count}{' ' + self.unit if self.unit else ''}{', ' + extra if extra else ''}, "
                f"{time.monotonic() - self._t0:.0f} s")

    def _fields_text(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.fields.items())

    def _line(self, force: bool = False) -> None:
        with self._lock:   # the heartbeat thread and the step's own
            now = time.monotonic()
            if force or self._last is None or now - self._last >= self.every:
                self._last, self._said = now, self.done
                print(self.line(), file=self._stream, flush=True)

    def __enter__(self) -> Steps:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""The generator's live progress: candidates tried, kept, the rate and the time left.

On a terminal (stderr) a rich progress bar; otherwise -- redirected to a file, in CI -- a
plain line every `every` seconds on stderr. Always: the same lines, and every stage's
message, appended with a timestamp to the run's log file (OUT/generate.log), together with
the warnings the tasks layer logs during the run.
"""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@dataclass
class Counts:
    """Where candidate testing stands."""

    total: int = 0
    """Candidates in the ordered list."""
    target: int | None = None
    """Kept bugs to stop at (None: test every candidate)."""
    done: int = 0
    """Candidates decided (tested, or skipped)."""
    tested: int = 0
    kept: int = 0
    skipped: int = 0
    """Capped (their function has enough tasks) or covered by no test."""
    fresh: int = 0
    """Test runs finished in this session (not read back from the journal)."""
    reused: int = 0
    """Outcomes read back from the journal."""


def eta_seconds(c: Counts, rate_per_s: float) -> float | None:
    """Seconds left at `rate_per_s` candidates a second: to the target at the kept share seen so
    far, or to the end of the list; None before anything is known."""
    if rate_per_s <= 0:
        return None
    left = c.total - c.done
    if c.target is not None:
        if c.kept >= c.target:
            return 0.0
        if c.kept == 0 or c.tested == 0:
            return None
        left = min(left, (c.target - c.kept) * c.tested / c.kept)
    return max(0.0, left / rate_per_s)


def status_line(c: Counts, per_min: float, eta: float | None) -> str:
    target = f" (of {c.target} wanted)" if c.target is not None else ""
    left = "time left unknown" if eta is None else f"about {_minutes(eta)} left"
    reused = f", {c.reused} from the journal" if c.reused else ""
    return (f"candidates {c.done}/{c.total} decided: {c.tested} tested, {c.kept} kept{target}, "
            f"{c.skipped} skipped{reused}; {per_min:.1f}/min, {left}")


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


class GenProgress:
    """Progress of one generator run (see the module docstring). A context manager."""

    def __init__(self, log_path: Path | None, show: bool = True, every: float = 30.0,
                 stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.show = show
        self.every = every
        self.counts = Counts()
        self._log = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115 - closed in close()
        self._handler: logging.Handler | None = None
        if self._log is not None:
            self._handler = logging.StreamHandler(self._log)
            self._handler.setLevel(logging.WARNING)
            self._handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
            logging.getLogger("fixrl.tasks").addHandler(self._handler)
        self._console = Console(file=self.stream, highlight=False)
        self._bar: Progress | None = None
        self._task = None
        self._t0 = time.monotonic()
        self._last = 0.0

    # ---- stage messages

    def note(self, message: str) -> None:
        """A stage's message: the log file, and stderr when shown."""
        self._to_log(message)
        if self.show:
            if self._bar is not None:
                self._bar.console.print(message, markup=False)
            else:
                print(message, file=self.stream, flush=True)

    def _to_log(self, message: str) -> None:
        if self._log is not None:
            self._log.write(time.strftime("%Y-%m-%d %H:%M:%S ") + message + "\n")
            self._log.flush()

    # ---- candidate testing

    def start(self, total: int, target: int | None, reused: int = 0) -> None:
        self.counts = Counts(total=total, target=target, reused=reused)
        self._t0 = self._last = time.monotonic()
        if self.show and self._console.is_terminal:
            self._bar = Progress(TextColumn("candidates"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[line]}"), TimeElapsedColumn(),
                                 console=self._console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task("candidates", total=total, line="")

    def rate(self) -> float:
        """Fresh test runs per second in this session."""
        elapsed = time.monotonic() - self._t0
        return self.counts.fresh / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        rate = self.rate()
        return status_line(self.counts, 60 * rate, eta_seconds(self.counts, rate))

    def update(self, force: bool = False) -> None:
        """Show the counts: the bar now; a plain line (and the log) every `every` seconds."""
        now = time.monotonic()
        if self._bar is not None and self._task is not None:
            c, rate = self.counts, self.rate()
            eta = eta_seconds(c, rate)
            self._bar.update(self._task, completed=c.done,
                             line=f"kept {c.kept}{f' of {c.target} wanted' if c.target else ''}, {60 * rate:.1f}/min, "
                                  + ("time left unknown" if eta is None else f"about {_minutes(eta)} left"))
        if force or now - self._last >= self.every:
            self._last = now
            text = self.line()
            self._to_log(text)
            if self.show and self._bar is None:
                print(text, file=self.stream, flush=True)

    def finish(self) -> float:
        """End candidate testing; the candidates a minute of this session."""
        self.update(force=True)
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        return round(60 * self.rate(), 2)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._handler is not None:
            logging.getLogger("fixrl.tasks").removeHandler(self._handler)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> GenProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""How a run shows it is alive: tqdm's bar on a terminal, a plain line every so often elsewhere.

A job whose output goes to a file (Slurm, nohup, a CI log) cannot use a bar: tqdm either
stays silent there (``disable=None``) or fills the file with carriage returns. Such a run
writes one line every ``every`` seconds instead, with what a person checking the log wants:
how many finished, how many failed, the rate, and the time left.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

# Seconds between two lines when not on a terminal; REGIONFOCUS_PROGRESS_EVERY overrides it.
DEFAULT_EVERY = 60.0


def _every_from_env() -> float:
    raw = os.environ.get("REGIONFOCUS_PROGRESS_EVERY")
    if not raw:
        return DEFAULT_EVERY
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"REGIONFOCUS_PROGRESS_EVERY must be a number of seconds > 0, got {raw!r}")
    return value


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class Progress:
    """Counts finished items of a run of ``total`` (``initial`` of them finished before this
    process started) and shows it. ``enabled``: None shows a bar on a terminal and lines
    elsewhere; False shows nothing; True shows a bar even where the stream is no terminal."""

    def __init__(
        self,
        total: int,
        *,
        desc: str,
        unit: str,
        initial: int = 0,
        enabled: bool | None = None,
        stream: TextIO | None = None,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total, self.desc, self.unit = total, desc, unit
        self.n, self.errors, self.note = initial, 0, ""
        self.stream = stream if stream is not None else sys.stderr
        self.every = _every_from_env() if every is None else every
        self.clock = clock
        self._start = self._last = clock()
        self._fresh = 0  # finished by this process: the rate counts only these
        self._shown = initial  # ``n`` at the last line written
        self.bar = None
        self.lines = False
        if enabled is False or total <= 0:
            return
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        if tty or enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=total, initial=initial, desc=desc, unit=unit, file=self.stream, dynamic_ncols=True
            )
        else:
            self.lines = True

    def update(self, n: int = 1, *, error: bool = False, note: str | None = None) -> None:
        """``n`` more finished (``error``: they failed); ``note``: the running figures to show."""
        self.n += n
        self._fresh += n
        self.errors += n if error else 0
        if note is not None:
            self.note = note
        if self.bar is not None:
            if note:
                self.bar.set_postfix_str(note, refresh=False)
            self.bar.update(n)
        elif self.lines and self.clock() - self._last >= self.every:
            self._line()

    def line(self) -> str:
        """The status line as written to a log."""
        elapsed = self.clock() - self._start
        pct = 100 * self.n / self.total if self.total else 0.0
        parts = [f"{self.desc}: {self.n}/{self.total} {self.unit}s ({pct:.0f} %)", f"{self.errors} errors"]
        if self._fresh and elapsed > 0:
            rate = self._fresh / elapsed
            parts.append(f"{rate * 60:.1f} {self.unit}s/min")
            parts.append(f"about {_duration((self.total - self.n) / rate)} left")
        line = ", ".join(parts)
        return f"{line}; {self.note}" if self.note else line

    def _line(self) -> None:
        self._last, self._shown = self.clock(), self.n
        print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.lines and self.n != self._shown:
            self._line()
        self.lines = False

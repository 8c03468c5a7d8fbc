"""The progress line of `assay run` and `assay sweep` on stderr."""

from __future__ import annotations

import time
from typing import IO, Any


class Progress:
    """One progress line on stderr: redrawn in place on a terminal (at most every REDRAW_S), every 10% in
    a CI log. Called once per finished query from the event loop, so a call that draws nothing is a few
    additions and a comparison."""

    REDRAW_S = 0.05

    def __init__(self, total: int, stream: IO[str], noun: str = "queries") -> None:
        self.total, self.stream, self.noun = total, stream, noun
        self.done = self.errors = self.retries = 0
        self.tty = stream.isatty()
        self.next_mark = 0.1
        self.next_draw = 0.0

    def __call__(self, result: Any) -> None:
        self.done += 1
        if result.error is not None:
            self.errors += 1
        if result.attempts > 1:
            self.retries += result.attempts - 1
        share = self.done / self.total
        last = self.done == self.total
        if self.tty:
            now = time.monotonic()
            if now >= self.next_draw or last:
                self.next_draw = now + self.REDRAW_S
                self.stream.write(f"\r{self._line(share)}" + ("\n" if last else ""))
                self.stream.flush()
        elif share >= self.next_mark or last:
            self.stream.write(self._line(share) + "\n")
            self.stream.flush()
            while self.next_mark <= share:
                self.next_mark += 0.1

    def _line(self, share: float) -> str:
        done = f"{self.done}/{self.total} {self.noun} ({share:.0%})"
        return f"{done}, {self.errors} errors, {self.retries} retries"

"""Progress of a running crawl: one updating line on a terminal, plain log lines otherwise.

Rank 0 reports the global counters agreed at each sync (``counters.py``): pages, pages/s,
frontier, jobs in flight, errors.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Reports at most every ``interval`` seconds; ``mode`` is 'bar', 'log' or 'none'."""

    def __init__(self, mode: str = "auto", interval: float = 2.0, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "bar" if self.stream.isatty() else "log"
        self.mode = mode
        self.interval = interval if mode == "log" else min(interval, 0.25)
        self.start = time.monotonic()
        self.last = 0.0

    def update(self, superstep: int, g: dict[str, int], final: bool = False) -> None:
        """Show the global counters of one superstep (rate-limited unless ``final``)."""
        now = time.monotonic()
        if self.mode == "none" or (not final and now - self.last < self.interval):
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        pages = g["pages/committed"]
        line = (f"superstep {superstep}  pages {pages}  {pages / elapsed:.0f} pages/s  "
                f"frontier {g['frontier/size']}  in flight {g['window/unreleased']}  "
                f"errors {g['pages/errors']}  {elapsed:.1f} s")
        if self.mode == "bar":
            self.stream.write("\r\033[K" + line + ("\n" if final else ""))
        else:
            self.stream.write(f"bspcrawl: {line}\n")
        self.stream.flush()

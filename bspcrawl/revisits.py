"""Revisits: pages to fetch again a while after they were committed (``crawl_revisit_after``).

A page committed with a revisit due is kept here, on a heap by due time, until the
frontier's next schedule at or after that time puts it back into the queue. A URL is put
back once while it waits: a second revisit due before the first is scheduled is dropped.
A crawl that revisits never runs out of URLs; it ends at a limit or a stop.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bspcrawl.backlog import parse_all, record
from bspcrawl.messages import Link


@dataclass
class RevisitsState:
    """The revisits of a checkpoint: their records (``backlog.record``) in due order, and
    the seconds each had left."""

    records: np.ndarray  # uint8
    left: np.ndarray  # float64


class Revisits:
    """Pages due again at a monotonic time; ``len()`` counts them."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, str, int, int]] = []  # (due, fp, url, depth, hops)
        self.waiting: set[int] = set()  # fingerprints put back and not yet scheduled

    def __len__(self) -> int:
        return len(self.heap)

    def later(self, link: Link, fp: int, due: float) -> None:
        """Fetch ``link`` (fingerprint ``fp``) again at ``due``."""
        heapq.heappush(self.heap, (due, fp, link.url, link.depth, link.hops))

    def next(self) -> float:
        """When the first revisit is due (``inf``: none)."""
        return self.heap[0][0] if self.heap else math.inf

    def due(self, now: float) -> list[tuple[int, Link]]:
        """The revisits due by ``now`` that are not waiting already, as (fp, link)."""
        out = []
        while self.heap and self.heap[0][0] <= now:
            _, fp, url, depth, hops = heapq.heappop(self.heap)
            if fp not in self.waiting:
                self.waiting.add(fp)
                out.append((fp, Link(url, depth, hops)))
        return out

    def state(self, now: float) -> RevisitsState:
        later = sorted(self.heap)
        data = b"".join(record(fp, Link(url, depth, hops)) for _, fp, url, depth, hops in later)
        return RevisitsState(np.frombuffer(data, np.uint8),
                             np.array([r[0] - now for r in later], np.float64))

    def restore(self, state: RevisitsState, owned: Callable[[str], bool], now: float) -> None:
        """Add a state's revisits of the URLs ``owned``, due as long after ``now`` as they
        had left."""
        for (fp, link), left in zip(parse_all(state.records.tobytes()), state.left.tolist(),
                                    strict=True):
            if owned(link.url):
                self.later(link, fp, now + left)

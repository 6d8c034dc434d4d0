"""Revisits: when a committed page is due again (``crawl_revisit_after``).

A page waits on a heap by due time until a schedule puts it back into the queue, once: a
second revisit due before the first is scheduled is dropped.
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
    """The revisits of a checkpoint: their records in due order, the seconds each had left."""

    records: np.ndarray  # uint8
    left: np.ndarray  # float64


class Revisits:
    """Pages due again at a monotonic time."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, str, int, int]] = []  # (due, fp, url, depth, hops)
        self.waiting: set[int] = set()  # fingerprints put back and not yet scheduled

    def __len__(self) -> int:
        return len(self.heap)

    def later(self, link: Link, fp: int, due: float) -> None:
        """Fetch ``link`` again at ``due``."""
        heapq.heappush(self.heap, (due, fp, link.url, link.depth, link.hops))

    def next(self) -> float:
        """When the first revisit is due (``inf``: never)."""
        return self.heap[0][0] if self.heap else math.inf

    def due(self, now: float) -> list[tuple[int, Link]]:
        """The revisits due by ``now`` not waiting already."""
        out = []
        while self.heap and self.heap[0][0] <= now:
            _, fp, url, depth, hops = heapq.heappop(self.heap)
            if fp not in self.waiting:
                self.waiting.add(fp)
                out.append((fp, Link(url, depth, hops)))
        return out

    def state(self, now: float) -> RevisitsState:
        """The revisits for a checkpoint."""
        later = sorted(self.heap)
        data = b"".join(record(fp, Link(url, depth, hops)) for _, fp, url, depth, hops in later)
        return RevisitsState(np.frombuffer(data, np.uint8),
                             np.array([r[0] - now for r in later], np.float64))

    def restore(self, state: RevisitsState, owned: Callable[[str], bool], now: float) -> None:
        """Add a state's revisits of the URLs ``owned``, due as long after ``now`` as left."""
        for (fp, link), left in zip(parse_all(state.records.tobytes()), state.left.tolist(),
                                    strict=True):
            if owned(link.url):
                self.later(link, fp, now + left)

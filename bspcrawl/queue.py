"""The queue: which URL a rank schedules next, by priority (Marin et al. (2008), section 2).

Every accepted URL is a record in the backlog, in the log of its priority (``-depth``:
shallower first); the CBT orders only the logs' heads, at least the R about to be
extracted of each, so its top R are the top R of all. CBT ids are a counter, so within a
priority it is first come, first served, whether records wait in RAM or on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bspcrawl.backlog import Backlog, BacklogState, parse_all, record, replay
from bspcrawl.cbt import CBT
from bspcrawl.messages import Link
from bspcrawl.settings import Settings


@dataclass
class QueueState:
    """The queue in a checkpoint: the CBT's records and the jobs out, first on resume;
    the backlog's logs."""

    front: np.ndarray  # uint8: records
    backlog: BacklogState


class Queue:
    """URLs waiting by priority: :meth:`put` records, :meth:`extract` the best.

    Invariants (:meth:`_check`): every CBT id has its URL in ``heads``; ``loaded`` counts
    the CBT's URLs per priority.
    """

    def __init__(self, settings: Settings, directory: Path | None) -> None:
        self.cbt = CBT(bucket_size=settings.queue_bucket)
        self.backlog = Backlog(directory, settings.queue_memory_budget)
        self.heads: dict[int, tuple[int, Link]] = {}  # CBT id -> (fingerprint, link)
        self.loaded: dict[float, int] = {}  # priority -> URLs of it in the CBT
        self.next_id = 0

    def __len__(self) -> int:
        return len(self.backlog) + len(self.cbt)

    def put(self, prio: float, records: list[bytes]) -> None:
        """Add records of priority ``prio`` after those there."""
        self.backlog.put(prio, records)

    def extract(self, n: int) -> list[tuple[int, Link]]:
        """The best ``n`` URLs, as (fingerprint, link), in order."""
        for prio in self.backlog.waiting():
            have = self.loaded.get(prio, 0)
            if have < n:
                self._to_cbt(prio, self.backlog.take(prio, n - have))
        ids, prios = self.cbt.extract_many(n)
        for prio, k in zip(*np.unique(prios, return_counts=True), strict=True):
            self.loaded[float(prio)] -= int(k)
        return [self.heads.pop(i) for i in ids.tolist()]

    def _to_cbt(self, prio: float, taken: list[tuple[int, Link]]) -> None:
        """Insert URLs into the CBT after those of their priority there."""
        if not taken:
            return
        ids = np.arange(self.next_id, self.next_id + len(taken), dtype=np.int64)
        self.next_id += len(taken)
        self.heads.update(zip(ids.tolist(), taken, strict=True))
        self.loaded[prio] = self.loaded.get(prio, 0) + len(taken)
        self.cbt.insert_many(ids, np.full(len(taken), prio))

    def links(self) -> Iterator[tuple[int, Link]]:
        """Every URL waiting, as (fingerprint, link)."""
        for _, fp, link in self.backlog.records():
            yield fp, link
        yield from self.heads.values()

    def state(self, out: list[tuple[int, Link]]) -> QueueState:
        """The queue for a checkpoint, the URLs ``out`` (not committed) first in line again."""
        ids, _ = self.cbt.peek(len(self.cbt))
        front = [record(*self.heads[i]) for i in ids.tolist()] + [record(*x) for x in out]
        return QueueState(np.frombuffer(b"".join(front), np.uint8), self.backlog.state())

    def restore(self, state: QueueState, owned: Callable[[str], bool], where: Path) -> None:
        """Add a state's URLs that are ``owned``: its front to the CBT, its backlog's (read
        in ``where``) to this rank's backlog."""
        by_prio: dict[float, list[tuple[int, Link]]] = {}
        there = {fp for fp, _ in self.heads.values()}
        for fp, link in parse_all(state.front.tobytes()):
            if owned(link.url) and fp not in there:
                there.add(fp)
                by_prio.setdefault(-float(link.depth), []).append((fp, link))
        for prio, taken in by_prio.items():
            self._to_cbt(prio, taken)
        batch: dict[float, list[bytes]] = {}
        for prio, fp, link in replay(where, state.backlog):
            if owned(link.url):
                batch.setdefault(prio, []).append(record(fp, link))
                if len(batch[prio]) >= 4096:
                    self.put(prio, batch.pop(prio))
        for prio, recs in batch.items():
            self.put(prio, recs)

    def _check(self) -> None:
        ids, prios = self.cbt.peek(len(self.cbt))
        assert sorted(ids.tolist()) == sorted(self.heads), "a CBT id without its link"
        assert {p: n for p, n in self.loaded.items() if n} == {
            float(p): int(n) for p, n in zip(*np.unique(prios, return_counts=True),
                                             strict=True)}
        self.backlog._check()

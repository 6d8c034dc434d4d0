"""The selective-repeat sequence window that orders commits to the index.

After "Modifying Yioop's queuing process" (a CS 297 deliverable under C. Pollett, San José
State University): each schedule (one a superstep, maybe empty) gets a sequence number;
the sender refuses new schedules while ``size`` are outstanding, and the receiver holds
out-of-order results and releases whole schedules in sequence order, so pages reach the
index in the order they were scheduled.

Layout, for ``size=3`` after opening schedules 7, 8 and 9 and receiving 9's results::

    base = 7, next_seq = 10
    sender   = {7: ('s', 0/2 results), 8: ('s', 0/1), 9: ('a', 1/1)}
    release() -> []            # 7 is not acknowledged: 9 waits
    ... results of 7 arrive ...
    release() -> [7]           # 8 still blocks 9

:meth:`Window.defer` acknowledges a schedule held by a straggler, its missing jobs
``DEFERRED``; their results arrive in ``late``, to be committed once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEDULED = "s"
ACKNOWLEDGED = "a"
DEFERRED = object()  # a result slot given up on by defer(); the result arrives in ``late``


@dataclass(slots=True)
class Schedule:
    """One outstanding schedule: the sender's message plus the receiver's slots."""

    seq: int
    jobs: list[Any]
    schedule_time: float
    results: list[Any] = field(default_factory=list)
    missing: int = 0
    status: str = SCHEDULED

    def __post_init__(self) -> None:
        self.results = [None] * len(self.jobs)
        self.missing = len(self.jobs)
        if not self.jobs:
            self.status = ACKNOWLEDGED


class Window:
    """Sender and receiver windows of ``size`` schedules: :meth:`open`, :meth:`deliver`
    each result, :meth:`release` the acknowledged prefix."""

    def __init__(self, size: int, next_seq: int = 0) -> None:
        if size < 1:
            raise ValueError(f"window size must be >= 1, got {size}")
        self.size = size
        self.base = next_seq
        self.next_seq = next_seq
        self.outstanding: dict[int, Schedule] = {}
        self.deferred: dict[tuple[int, int], Any] = {}  # (seq, index) -> job, deferred
        self.late: list[Any] = []  # results of deferred jobs, in arrival order

    def __len__(self) -> int:
        return len(self.outstanding)

    def full(self) -> bool:
        """True when ``size`` schedules are outstanding: no new one may be opened."""
        return len(self.outstanding) >= self.size

    def open(self, jobs: list[Any], now: float) -> int:
        """Give ``jobs`` the next sequence number; RuntimeError if the window is full."""
        if self.full():
            raise RuntimeError("sender window is full")
        seq = self.next_seq
        self.next_seq += 1
        self.outstanding[seq] = Schedule(seq, jobs, now)
        return seq

    def deliver(self, seq: int, index: int, result: Any) -> bool:
        """Record job ``index`` of ``seq``'s result (a deferred one's goes to ``late``);
        False, ignoring it, for a duplicate, so it is committed at most once."""
        if (seq, index) in self.deferred:
            del self.deferred[(seq, index)]
            self.late.append(result)
            return True
        sched = self.outstanding.get(seq)
        if sched is None or sched.results[index] is not None:
            return False
        sched.results[index] = result
        sched.missing -= 1
        if sched.missing == 0:
            sched.status = ACKNOWLEDGED
        return True

    def defer(self, seq: int) -> int:
        """Acknowledge ``seq`` now, marking its missing jobs DEFERRED; returns how many."""
        sched = self.outstanding[seq]
        missing = [i for i, r in enumerate(sched.results) if r is None]
        for i in missing:
            sched.results[i] = DEFERRED
            self.deferred[(seq, i)] = sched.jobs[i]
        sched.missing, sched.status = 0, ACKNOWLEDGED
        return len(missing)

    def acknowledged(self, seq: int) -> bool:
        """True once every job of ``seq`` has a result (or ``seq`` is already released)."""
        sched = self.outstanding.get(seq)
        return sched is None or sched.status == ACKNOWLEDGED

    def release(self, upto: int | None = None) -> list[Schedule]:
        """Remove and return the acknowledged schedules at the front, in sequence order
        (only those numbered ``upto`` or less, when given)."""
        out = []
        last = self.next_seq - 1 if upto is None else upto
        while self.base <= last and self.base in self.outstanding and self.acknowledged(self.base):
            out.append(self.outstanding.pop(self.base))
            self.base += 1
        return out

    def in_flight(self) -> int:
        """Jobs scheduled and not yet answered (deferred ones included)."""
        return sum(s.missing for s in self.outstanding.values()) + len(self.deferred)

    def _check(self) -> None:
        assert self.base <= self.next_seq
        assert all(self.base <= s < self.next_seq for s in self.outstanding)
        assert len(self.outstanding) <= self.size
        for sched in self.outstanding.values():
            assert sched.missing == sum(r is None for r in sched.results)
            deferred = {(sched.seq, i) for i, r in enumerate(sched.results) if r is DEFERRED}
            assert deferred <= self.deferred.keys()
            assert (sched.status == ACKNOWLEDGED) == (sched.missing == 0)

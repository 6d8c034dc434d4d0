"""One rank's frontier: the URLs it owns and has not fetched yet, in four parts: the
*intake* decides which URLs are accepted, the *queue* which comes next by priority, the
*host table* which host may get a job now, the *revisits* when a page is due again.

An accepted URL goes to the queue; extracted (the top R of a schedule), it waits in its
host's Q until the host may get a job. For unpaced hosts that answer nothing depends on the
clock, so crawls with the same seeds, settings and P schedule the same URLs in order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bspcrawl.backlog import record
from bspcrawl.counters import Stats
from bspcrawl.hosts import HostsState, HostTable
from bspcrawl.intake import Intake, IntakeState
from bspcrawl.messages import FetchJob, FetchResult, Link
from bspcrawl.queue import Queue, QueueState
from bspcrawl.revisits import Revisits, RevisitsState
from bspcrawl.settings import Settings
from bspcrawl.urls import host_key


@dataclass
class FrontierState:
    """The frontier in a checkpoint: each part's state."""

    intake: IntakeState
    queue: QueueState
    hosts: HostsState
    revisits: RevisitsState

    def over(self, base: FrontierState) -> FrontierState:
        """An incremental state completed by its base's seen set and unchanged hosts."""
        intake = IntakeState(base.intake.seen, self.intake.journal_base,
                             self.intake.journal_end, self.intake.budgets)
        return FrontierState(intake, self.queue, self.hosts.over(base.hosts), self.revisits)


class Frontier:
    """The parts of one rank's frontier, and the calls the scheduler makes: :meth:`receive`,
    :meth:`next_jobs`, :meth:`done`, :meth:`revisit_later`; :meth:`state` and
    :meth:`restore` for checkpoints; ``len()`` counts URLs waiting.

    Invariants (:meth:`_check`, and each part's): every URL waiting is in exactly one
    place, the queue or one host's Q, and in the seen set.
    """

    def __init__(self, settings: Settings, stats: Stats | None = None,
                 clock: Callable[[], float] = time.monotonic, ranks: int = 1,
                 seen_dir: Path | None = None, backlog_dir: Path | None = None) -> None:
        self.settings = settings
        self.stats = Stats() if stats is None else stats
        self.clock = clock
        self.wall = time.time  # dates checkpoints across processes
        self.dir = backlog_dir
        self.intake = Intake(settings, self.stats, ranks, seen_dir, backlog_dir)
        self.queue = Queue(settings, backlog_dir)
        self.revisits = Revisits()
        self.hosts = HostTable(settings, self.stats, self.revisits.waiting.discard)
        self.seen, self.budgets = self.intake.seen, self.intake.budgets

    def __len__(self) -> int:
        return len(self.queue) + self.hosts.pending + len(self.revisits)

    @property
    def resting(self) -> list[tuple[float, str]]:
        """The resting hosts with URLs: (ready_at, host), a heap."""
        return self.hosts.resting

    def receive(self, links: list[Link]) -> int:
        """Queue the links the intake accepts; how many."""
        records = self.intake.accept(links)
        for prio, recs in records.items():
            self.queue.put(prio, recs)
        return sum(map(len, records.values()))

    def fingerprints(self, urls: list[str]) -> np.ndarray:
        """Seen-set keys of canonical URLs."""
        return self.intake.fingerprints(urls)

    def revisit_later(self, link: Link, fp: int, due: float) -> None:
        """Fetch ``link`` again at monotonic time ``due``."""
        self.revisits.later(link, fp, due)

    def next_ready(self) -> float:
        """When a resting host may get a job or a revisit is due (``inf``: never)."""
        return min(self.hosts.next_ready(), self.revisits.next())

    def next_jobs(self, seq: int, now: float | None = None) -> list[FetchJob]:
        """The jobs of schedule ``seq``: a job per host that can take one, Q before the
        queue's best, then more for unpaced hosts with long queues."""
        now = self.clock() if now is None else now
        for fp, link in self.revisits.due(now):
            self.queue.put(-float(link.depth), [record(fp, link)])
        jobs: list[FetchJob] = []
        served = self.hosts.serve_active(seq, jobs, now)
        room = self.settings.queue_batch - len(jobs)
        if room > 0 and self.hosts.pending < self.settings.queue_pending_max:
            for fp, link in self.queue.extract(room):
                self.hosts.add(fp, link, seq, jobs, served, now)
        self.hosts.share(served, seq, jobs, now)
        return jobs

    def done(self, result: FetchResult) -> bool:
        """False when the job is not to be committed (``HostTable.done``)."""
        return self.hosts.done(result, self.clock())

    def waiting_links(self) -> dict[int, Link]:
        """Every URL waiting in the queue and Q, by fingerprint (reads the backlog's files)."""
        return {**dict(self.queue.links()), **dict(self.hosts.links())}

    def _check(self) -> None:
        self.queue._check()
        self.hosts._check()
        waiting = [fp for fp, _ in self.queue.links()] + [fp for fp, _ in self.hosts.links()]
        assert len(set(waiting)) == len(waiting), "a URL waits in two places"
        assert self.seen.contains_batch(waiting).all(), "a waiting URL not in the seen set"
        assert self.revisits.waiting <= set(waiting)

    def state(self, unfinished: list[FetchJob], full: bool | None = True) -> FrontierState:
        """The frontier for a checkpoint, with the ``unfinished`` page jobs to fetch again;
        full (seen set and every host) by the rule of ``Intake.state``."""
        now = self.clock()
        intake = self.intake.state(full)
        out = [(j.fp, Link(j.url, j.depth, j.hops)) for j in unfinished if not j.robotstxt]
        return FrontierState(intake, self.queue.state(out),
                             self.hosts.state(intake.seen is not None, now, self.wall()),
                             self.revisits.state(now))

    def restore(self, states: list[FrontierState], mine: Callable[[str], bool],
                dirs: list[Path] | None = None) -> None:
        """Rebuild from full states, one per rank of the crawl that wrote them (their files
        in ``dirs``, only read), keeping the hosts ``mine`` and their URLs."""
        now = self.clock()
        dirs = dirs or [self.dir] * len(states)  # type: ignore[list-item]
        self.queue.backlog.start_after_existing()
        owned = (lambda url: True) if len(states) == 1 else (
            lambda url: mine(host_key(url)))
        self.intake.restore([st.intake for st in states], dirs, mine)
        for st, where in zip(states, dirs, strict=True):
            self.hosts.restore(st.hosts, mine, now)
            self.queue.restore(st.queue, owned, where)
            self.revisits.restore(st.revisits, owned, now)

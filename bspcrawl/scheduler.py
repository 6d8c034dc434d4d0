"""One rank's scheduler: the receive_messages and run steps of a superstep, without MPI.

Marin et al. (2008), section 2: each superstep a rank's scheduler takes in the URLs the
other ranks sent (:meth:`Scheduler.receive`: seen set, CBT) and runs (:meth:`Scheduler.run`):

1. **commit**: once the sequence window holds ``fetch_workers`` outstanding schedules, the
   oldest is released (waiting for its fetches; ``index/window.py``) and its results are
   committed in schedule order: the frontier accounts for each, and each page goes through
   the commit pipeline (``commit.py``), which yields its links;
2. **schedule**: the frontier gives this superstep's jobs; the archive answers pages still
   fresh at once; the rest go to the fetch workers (``robots/fetcher.py``).

**Reproducible by construction**: when to commit is decided on counts, never on fetch
times, so without wall-clock politeness the same seeds, settings and P give the same
pages the same doc ids (the crawl tests check it with random server latencies). A
straggler past ``window_straggler_timeout`` is committed when it comes, after its schedule.
A fetcher thread that dies or hangs is replaced and its unanswered jobs handed to the new
one (Dominos' worker regeneration); a job that outlives ``MAX_RESCHEDULES`` threads is
committed as the error ``robot_hang``. The clock and the fetcher are parameters (tests).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from bspcrawl.commit import Committer
from bspcrawl.counters import Stats
from bspcrawl.frontier import Frontier
from bspcrawl.index.archive import Archive
from bspcrawl.index.window import DEFERRED, Window
from bspcrawl.messages import FetchJob, FetchResult, Link
from bspcrawl.robots.fetcher import WITHDRAWN, Fetcher
from bspcrawl.settings import Settings

MAX_RESCHEDULES = 2  # fetcher threads a job may outlive (hang) before it is an error
IDLE_SLEEP = 0.005  # s, the least wait of a superstep when all of a rank's hosts rest
IDLE_MAX = 0.05  # s, the most, when every rank was idle the superstep before
COLLECT_WAIT = 0.05  # s, the longest wait for one result while a schedule is due


def _suspects_last(jobs: list[FetchJob]) -> list[FetchJob]:
    """Jobs for a new fetcher thread, each host's first (the suspect of the hang) last, so
    a job that hangs the thread does not take the jobs behind it down with it."""
    jobs = sorted(jobs, key=lambda j: (j.seq, j.index))
    first = {j.host: id(j) for j in reversed(jobs)}
    return sorted(jobs, key=lambda j: id(j) == first[j.host])


class FetcherLike(Protocol):
    """What the scheduler needs of the fetch workers (:class:`Fetcher`, or a test's)."""

    def submit(self, jobs: list[FetchJob]) -> None: ...
    def get(self, timeout: float | None = None) -> FetchResult | None: ...
    def healthy(self, stall: float) -> bool: ...
    def withdraw(self) -> None: ...
    def close(self, wait: float = 10.0) -> None: ...


class Scheduler:
    """The receive and run steps of one rank: :meth:`receive`, :meth:`run`,
    :meth:`withdraw` (a stop), :meth:`unreleased`, :meth:`unfinished` (a checkpoint),
    :meth:`close`."""

    def __init__(self, settings: Settings, frontier: Frontier, window: Window,
                 archive: Archive, committer: Committer, stats: Stats,
                 fetcher: Callable[[Settings], FetcherLike] = Fetcher,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time,
                 idle_max: float = IDLE_SLEEP) -> None:
        self.settings, self.frontier, self.window = settings, frontier, window
        self.archive, self.committer, self.stats = archive, committer, stats
        self.new_fetcher, self.clock, self.wall = fetcher, clock, wall
        self.idle_max = idle_max
        self.fetcher = fetcher(settings)
        self.reschedules: dict[tuple[int, int], int] = {}  # (seq, index) -> threads outlived
        self.withdrawing = False
        self.withdrawn: set[tuple[int, int]] = set()  # (seq, index) given back unstarted
        self.held_from: int | None = None  # the first schedule with a job withdrawn

    def receive(self, links: list[Link]) -> int:
        """receive_messages: anchors credited, links into the seen set and the CBT; returns
        how many were new."""
        self.stats["exchange/urls_in"] += len(links)
        self.committer.credit(links)
        return self.frontier.receive(links)

    def run(self, draining: bool) -> list[Link]:
        """run: commit what the window releases, then open this superstep's schedule (none
        while ``draining``: every outstanding one is committed); returns the links found.
        With no job and no host resting, only a commit can give a job: then the oldest
        schedule is committed instead of an empty one opened."""
        links: list[Link] = []
        self._supervise()
        while (self.window.full() or (draining and len(self.window))) \
                and self.window.base != self.held_from:
            self._release(draining, links)
        self._collect(COLLECT_WAIT if draining and self.window.deferred else None)
        for result in self.window.late:  # stragglers deferred earlier, committed once
            self._commit(result, links)
        self.stats["window/late"] += len(self.window.late)
        self.window.late.clear()
        if not draining:
            jobs = self.frontier.next_jobs(self.window.next_seq)
            f = self.frontier
            if jobs or f.resting or f.revisits:
                self._schedule(jobs, links)
            elif len(self.window):
                self._release(draining, links)
        self.stats["exchange/urls_found"] += len(links)
        return links

    def withdraw(self) -> None:
        """A stop: the fetch workers give back the jobs not started (a stop need not wait
        out rests). Schedules before the first with a job given back are committed; the
        rest stay outstanding and a checkpoint keeps their jobs (:meth:`unfinished`)."""
        self.withdrawing = True
        self.fetcher.withdraw()

    def _release(self, draining: bool, links: list[Link]) -> None:
        """Commit the oldest outstanding schedule, waiting for its results."""
        seq = self.window.base
        self._wait_for(seq, draining)
        for sched in self.window.release(upto=seq):
            for result in sched.results:
                if result is not DEFERRED:
                    self._commit(result, links)

    def _schedule(self, jobs: list[FetchJob], links: list[Link]) -> None:
        """Open this superstep's schedule and hand it out (fresh pages to the window)."""
        self.window.open(jobs, self.wall())
        cached = self.archive.plan([j for j in jobs if not j.robotstxt], self.wall())
        fresh = {id(r.job) for r in cached}
        self.fetcher.submit([j for j in jobs if id(j) not in fresh] if fresh else jobs)
        for r in cached:
            self.window.deliver(r.job.seq, r.job.index, r)
        if not jobs and not links and (self.frontier.resting or self.frontier.revisits):
            self._idle()

    def _idle(self) -> None:
        """Every host with URLs rests: wait for a result or the first rest's end, between
        ``IDLE_SLEEP`` and ``idle_max`` s (``IDLE_MAX`` when every rank was idle, else
        short: a rank with work would wait for this one at the sync)."""
        self.stats["scheduler/idle"] = 1
        t0 = self.clock()
        self._collect(min(self.idle_max, max(IDLE_SLEEP, self.frontier.next_ready() - t0)))
        self.stats["time/wait"] += self.clock() - t0

    def _commit(self, result: FetchResult, links: list[Link]) -> None:
        """Account for one result and commit it if it is a page's final answer."""
        if not self.frontier.done(result):
            self.committer.discard(result)
            return
        links += self.committer.commit(result)
        after = self.settings.crawl_revisit_after
        if after and (200 <= result.status < 300 or result.revisit):
            job = result.job
            self.frontier.revisit_later(Link(job.url, job.depth, job.hops), job.fp,
                                        self.clock() + after)

    def _collect(self, timeout: float | None = None) -> None:
        """Deliver every finished result to the window (waiting up to ``timeout`` s for the
        first; None: no wait) and have its page analysed ahead."""
        result = self.fetcher.get(timeout)
        delivered = []
        while result is not None:
            job = result.job
            if result.error == WITHDRAWN:
                self.withdrawn.add((job.seq, job.index))
                if job.seq in self.window.outstanding and (self.held_from is None
                                                           or job.seq < self.held_from):
                    self.held_from = job.seq
            elif self.window.deliver(job.seq, job.index, result):
                delivered.append(result)
            result = self.fetcher.get()
        self.committer.prepare(delivered)

    def _wait_for(self, seq: int, draining: bool) -> None:
        """Deliver results to the window until schedule ``seq`` is acknowledged, or defer
        its stragglers after ``window_straggler_timeout`` (not while draining)."""
        t0 = self.clock()
        timeout = self.settings.window_straggler_timeout
        self._collect()
        while not self.window.acknowledged(seq) and seq != self.held_from:
            self._supervise()
            if timeout and not draining and self.clock() - t0 >= timeout:
                self.stats["window/deferred"] += self.window.defer(seq)
                break
            self._collect(COLLECT_WAIT)
        self.stats["time/wait"] += self.clock() - t0

    def _supervise(self) -> None:
        """Replace a fetcher thread that died or hung (module docstring)."""
        stall = self.settings.window_straggler_timeout or 30.0
        if self.fetcher.healthy(stall):
            return
        self._collect()
        self.fetcher.close(wait=0.0)
        self.fetcher = self.new_fetcher(self.settings)
        if self.withdrawing:
            self.fetcher.withdraw()
        self.stats["fetcher/replaced"] += 1
        unanswered = [(s.seq, i, job) for s in self.window.outstanding.values()
                      for i, job in enumerate(s.jobs) if s.results[i] is None]
        unanswered += [(seq, i, job) for (seq, i), job in self.window.deferred.items()]
        again = []
        for seq, i, job in unanswered:
            tries = self.reschedules[(seq, i)] = self.reschedules.get((seq, i), 0) + 1
            if tries > MAX_RESCHEDULES:
                self.window.deliver(seq, i, FetchResult(job, error="robot_hang",
                                                        ended=self.clock()))
            else:
                again.append(job)
        self.stats["window/rescheduled"] += len(again)
        self.fetcher.submit(_suspects_last(again))

    def unreleased(self) -> int:
        """Page jobs scheduled, not committed yet, that this run will still commit (none
        from the first schedule with a job withdrawn on)."""
        held = self.held_from
        return sum(not j.robotstxt for s in self.window.outstanding.values()
                   if held is None or s.seq < held for j in s.jobs) \
            + len(self.window.deferred.keys() - self.withdrawn)

    def unfinished(self) -> list[FetchJob]:
        """Jobs scheduled and not committed (to fetch again after a resume)."""
        jobs = [j for sched in self.window.outstanding.values() for j in sched.jobs]
        return jobs + list(self.window.deferred.values())

    def close(self) -> None:
        """Stop the fetcher thread and the committer's worker processes."""
        self.fetcher.close()
        self.committer.close()

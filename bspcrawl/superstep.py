"""The BSP crawl loop of Marin et al. (2008), section 2: one rank's supersteps.

Every rank loops (:meth:`Crawl.run`)::

    receive_messages   links delivered at the last sync -> seen set -> CBT   (scheduler.py)
    run                commit the window's oldest schedule once it is due; open this
                       superstep's schedule for the fetch workers              (scheduler.py)
    send_messages      links bucketed by the rank that owns their host      (partition.py)
    sync               one Ialltoall of byte counts and counters; hosts announced and
                       links delivered only when there are any                 (bsp.py)

After the sync every rank holds the same global counters, so all ranks decide alike to
stop (a limit, a signal, ``bspcrawl stop``), and stop together when every frontier is empty
and nothing is in flight. This module also owns what happens between supersteps: the
``/stats`` row, progress, index segments, checkpoints, the stop file and signals (finish
the outstanding schedules, checkpoint, stop; a second signal stops at once), and a resume
onto the same or another number of ranks. Only the main thread calls MPI.
"""

from __future__ import annotations

import os
import resource
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from mpi4py import MPI

from bspcrawl import bsp, checkpoint
from bspcrawl.analysis import LinkKeys, Pool, workers_for
from bspcrawl.commit import Committer
from bspcrawl.counters import Stats, synced
from bspcrawl.frontier import Frontier
from bspcrawl.index.archive import Archive, previous_hosts
from bspcrawl.index.output import SEEN_DIR, STOP_FILE
from bspcrawl.index.store import RankStore
from bspcrawl.index.window import Window
from bspcrawl.messages import Link
from bspcrawl.partition import (
    Directory,
    host_pair,
    notice,
    pack,
    read_notices,
    unpack,
)
from bspcrawl.progress import Progress
from bspcrawl.scheduler import IDLE_MAX, IDLE_SLEEP, Scheduler
from bspcrawl.settings import Settings
from bspcrawl.urls import host_key

STOP_CHECK_S = 0.5  # seconds between looks for the stop file


class Board(Protocol):
    """What the loop hands the global counters of each superstep to (the status page)."""

    def update(self, superstep: int, g: dict[str, int]) -> None: ...


@dataclass
class Outcome:
    """What a finished crawl reports (global totals)."""

    supersteps: int
    pages: int
    pages_ok: int
    errors: int
    bytes: int
    seen: int
    frontier: int
    wall_s: float
    stopped: str


@dataclass
class Resume:
    """The complete checkpoint a crawl continues from: its superstep and every rank's
    state and attributes."""

    superstep: int
    states: list[tuple[checkpoint.RankState, dict]]


@dataclass
class Outbox:
    """send_messages' product: the URL batches by rank and the hosts announced."""

    buf: np.ndarray
    counts: np.ndarray
    notice: np.ndarray  # new hosts and budget news (partition.notice)


class Crawl:
    """One rank's crawl: frontier, scheduler, index and the superstep loop."""

    def __init__(self, comm: MPI.Comm, settings: Settings, out: Path, seeds: list[str],
                 progress: Progress | None = None, resume: Resume | None = None,
                 status: Board | None = None) -> None:
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        self.settings, self.out, self.seeds, self.progress = settings, out, seeds, progress
        self.status = status  # rank 0's live status page (browse/status.py), handed g
        self.stats = Stats()
        self.frontier = Frontier(settings, self.stats, ranks=self.size,
                                 seen_dir=out / SEEN_DIR / f"rank-{self.rank:04d}",
                                 backlog_dir=checkpoint.frontier_dir(out, self.rank))
        self.window = Window(settings.fetch_workers)
        at = resume.superstep if resume else None
        self.archive = Archive(out, self.rank, warc=not settings.index_no_warc,
                               revisits=bool(settings.recrawl or settings.crawl_revisit_after))
        self.store = RankStore(out, self.rank, self.size, settings.to_dict(),
                               settings.index_flush_pages, resume_at=at, archive=self.archive)
        self.directory = Directory(self.size, settings.crawl_max_domain_hosts,
                                   settings.crawl_deal_hosts)
        self.directory.assign(host_pair(host_key(u)) for u in seeds)  # every rank deals them alike
        if settings.recrawl and resume is None:  # its history keeps host hashes only: a
            # host of the previous crawl counts as a domain of its own
            self.directory.assign((h, h) for h in previous_hosts(Path(settings.recrawl)).tolist())
            self.store.carry(Path(settings.recrawl), self.directory.owns(self.rank))
        self.orphans: list[RankStore] = []  # rank files of a larger P, closed by rank 0
        self.inbox = self.directory.bucket([Link(u) for u in seeds])[0][self.rank]
        self.held: list[Link] = []  # links to hosts not dealt yet, sent next superstep
        self.superstep = 0
        self.retention = checkpoint.Retention(out, self.rank, self.frontier.queue.backlog)
        self.stop_requested = ""
        self.next_stop_check = 0.0
        if resume:
            self._restore(resume)

    def run(self) -> Outcome:
        """Crawl until every frontier is empty and nothing is in flight, or a limit."""
        s, start = self.settings, time.monotonic()
        self._fault(self.superstep, "start")
        workers = workers_for(s.index_parse_processes, bsp.node_size(self.comm))
        pool = Pool(workers, s.url_strip_params, self.stats) if workers else None
        committer = Committer(self.archive, self.store, s.agent_token,
                              LinkKeys(s.url_strip_params), s.crawl_max_outlinks, self.stats,
                              s.crawl_max_page_hosts, pool)
        self.scheduler = Scheduler(s, self.frontier, self.window, self.archive, committer,
                                   self.stats)
        old = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT,
                                                                  signal.SIGTERM)}
        stopping, stopped = "", ""
        try:
            while not stopped:
                k = self.superstep
                self.stats.start_step()
                self.scheduler.receive(self.inbox)                  # receive_messages
                links = self.scheduler.run(draining=bool(stopping))  # run
                outbox = self.send_messages(links)                  # send_messages
                g = self.sync(outbox, start)                        # sync
                self.scheduler.idle_max = IDLE_MAX if g["scheduler/idle"] == self.size \
                    else IDLE_SLEEP
                self.store.add_stats(self.stats.row(self.rank, k))
                if self.progress:
                    self.progress.update(k, g)
                if self.status:
                    self.status.update(k, g)
                was, (stopping, stopped) = stopping, self._decide(g, stopping)
                if stopping in ("signal", "max_seconds") and not was:
                    self.scheduler.withdraw()  # a stop need not wait out hosts' rests
                checkpoint_now = stopped or (s.checkpoint_every and k % s.checkpoint_every == 0)
                if checkpoint_now:
                    self._checkpoint(k)
                elif self.store.buffered >= s.index_flush_pages:
                    self.store.seal(k)
                self.superstep += 1
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
            self.scheduler.close()
            self.archive.close()
            self.frontier.seen.close()
        self.store.close(k)
        for orphan in self.orphans:
            orphan.close(k)
        return Outcome(self.superstep, g["pages/committed"], g["pages/ok"], g["pages/errors"],
                       g["pages/bytes"], g["frontier/seen"], g["frontier/size"],
                       time.monotonic() - start, stopped)

    def send_messages(self, links: list[Link]) -> Outbox:
        """Bucket the links found (and those held last superstep) by owner rank; links to
        hosts no rank owns yet are held, their hosts announced at the sync."""
        boxes, held, refused = self.directory.bucket(self.held + links)
        self.held = held
        self.stats["exchange/domain_full"] += refused
        sent = sum(map(len, boxes))
        self.stats["exchange/urls_remote"] = sent - len(boxes[self.rank])
        self.stats["exchange/undelivered"] = sent + len(held)
        buf, counts = pack(boxes)
        keys = dict.fromkeys(host_key(x.url) for x in held)
        return Outbox(buf, counts, notice([host_pair(k) for k in keys],
                                          self.frontier.budgets.news()))

    def sync(self, outbox: Outbox, start: float) -> dict[str, int]:
        """Agree on the global counters, deal the hosts announced and deliver the links
        (the inbox of the next superstep); returns the counters summed over the ranks."""
        self._gauges(start)
        t0 = time.monotonic()
        agreed = bsp.sync(self.comm, outbox.counts, len(outbox.notice), self.stats.vector())
        hosts, news = read_notices(bsp.announce(self.comm, outbox.notice, agreed.found),
                                   agreed.found, self.rank)
        self.directory.assign(hosts)
        self.frontier.budgets.add_news(news)
        self.inbox = unpack(bsp.exchange(self.comm, outbox.buf, outbox.counts,
                                         agreed.recv_counts), agreed.recv_counts) \
            if agreed.any_sent else []
        self.stats["time/wait"] += time.monotonic() - t0
        return synced(agreed.totals)

    def _gauges(self, start: float) -> None:
        """Set the gauges and this rank's stop requests."""
        now, st, stats = time.monotonic(), self.store, self.stats
        if self.rank == 0 and now >= self.next_stop_check:
            self.next_stop_check = now + STOP_CHECK_S  # a stat can cost 1 ms
            if (self.out / STOP_FILE).exists():
                self.stop_requested = self.stop_requested or "stop file"
        limit = self.settings.crawl_max_seconds
        stats["time/elapsed"] = now - start
        stats["pages/committed"], stats["pages/ok"] = st.docs, st.pages_ok
        stats["pages/errors"], stats["pages/bytes"] = st.errors, st.bytes
        stats["frontier/size"], stats["frontier/seen"] = len(self.frontier), len(
            self.frontier.seen)
        stats["window/in_flight"] = self.window.in_flight()
        stats["window/unreleased"] = self.scheduler.unreleased()
        stats["stop/requested"] = int(bool(self.stop_requested))
        stats["stop/timeout"] = int(bool(self.rank == 0 and limit and now - start >= limit))

    def _decide(self, g: dict[str, int], stopping: str) -> tuple[str, str]:
        """(why to stop scheduling, why the crawl stops now), from the global counters:
        every rank takes the same decision."""
        if not (g["frontier/size"] or g["window/unreleased"] or g["exchange/undelivered"]):
            return stopping, stopping or "done"
        if stopping:
            return stopping, stopping if g["window/unreleased"] == 0 else ""
        if g["stop/requested"]:
            return "signal", ""
        if g["stop/timeout"]:
            return "max_seconds", ""
        most = self.settings.crawl_max_pages
        if most and g["pages/committed"] + g["window/unreleased"] >= most:
            return "max_pages", ""
        return "", ""

    def _checkpoint(self, k: int) -> None:
        """Seal the index segment of superstep ``k`` and write this rank's state; rank 0
        marks the checkpoint complete once every rank has written it."""
        self._fault(k, "before")
        self.store.seal(k)
        frontier = self.frontier.state(self.scheduler.unfinished(), full=None)
        base = self.retention.base_of(k, frontier)
        state = checkpoint.RankState.of(frontier, self.directory.state(), self.inbox,
                                        self.held)
        checkpoint.write(self.out, self.rank, k, state, {
            "next_seq": self.window.next_seq, "counters": self.stats.totals(), "base": base})
        self._fault(k, "during")
        bsp.barrier(self.comm)
        if self.rank == 0:
            checkpoint.mark_complete(self.out, k, self.size, {
                "settings": self.settings.to_dict(), "seeds": self.seeds})
        bsp.barrier(self.comm)
        self.retention.keep(k, frontier, base)
        self._fault(k, "after")

    def _restore(self, resume: Resume) -> None:
        """Continue from a checkpoint; with another P, take this rank's share of them all."""
        same = len(resume.states) == self.size
        mine = [resume.states[self.rank]] if same else resume.states
        states = [st for st, _ in mine]
        self.directory = Directory.from_state(states[0].directory, self.size,
                                              self.settings.crawl_max_domain_hosts,
                                              self.settings.crawl_deal_hosts)
        ranks = [self.rank] if same else range(len(resume.states))
        self.frontier.restore([st.frontier for st in states],
                              lambda key: self.directory.rank_of(key) == self.rank,
                              [checkpoint.frontier_dir(self.out, r) for r in ranks])
        if self.rank < len(resume.states):
            own, attrs = resume.states[self.rank]
            self.retention.keep(resume.superstep, own.frontier, attrs["base"], collect=False)
        self.inbox = []
        for name in ("inbox", "held"):  # with another P, held links go to their owners
            links = [x for st in states for x in st.links(name)]
            if name == "held" and same:
                self.held = links
            else:
                self.inbox += [x for x in links if self.directory.owner(x.url) == self.rank]
        self.window = Window(self.settings.fetch_workers,
                             max(attrs["next_seq"] for _, attrs in mine))
        if same:
            self.stats.restore(mine[0][1].get("counters", {}))
        if self.rank == 0:
            self.orphans = [RankStore(self.out, r, self.size, self.settings.to_dict(), 1,
                                      resume_at=resume.superstep)
                            for r in range(self.size, len(resume.states))]
        self.superstep = resume.superstep + 1

    def _fault(self, k: int, point: str) -> None:
        """Fault injection for the tests: BSPCRAWL_FAULT=rank:superstep:point kills this
        process at a checkpoint's point; BSPCRAWL_FAULT=fsize:N caps every file at N bytes
        from the start (a full disk)."""
        fault = os.environ.get("BSPCRAWL_FAULT", "")
        if fault == f"{self.rank}:{k}:{point}":
            os.kill(os.getpid(), signal.SIGKILL)
        if point == "start" and fault.startswith("fsize:"):
            size = int(fault[6:])
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.stop_requested:  # a second signal: stop at once
            raise KeyboardInterrupt
        self.stop_requested = signal.Signals(signum).name

"""The BSP crawl loop of Marin et al. (2008), section 2, on mpi4py.

Every rank loops over supersteps::

    receive_messages   links delivered by the last exchange -> seen set -> CBT
    run                commit the oldest schedule once the window is full (waiting for
                       its fetches if needed), extract links; open this superstep's
                       schedule from the CBT top R and hand it to the robots
    send_messages      links bucketed by owner rank, exchanged with Ialltoallv
    sync               one Iallreduce of counters; all ranks decide together to stop

**Reproducible by construction.** Each superstep opens exactly one schedule (possibly
empty) and commits a schedule only when the window of ``fetch_robots`` schedules is full,
so schedule ``s`` is committed in superstep ``s + fetch_robots``, whatever the fetch times
are. The robots work in the background across those supersteps, and a superstep waits only
for a schedule that is that old. Links, hosts freed and the CBT's contents therefore evolve
identically in every run with the same seeds, settings and P: the same pages get the same
doc ids (``tests/mpi/test_crawl.py`` checks it with randomised server latencies).
``--max-seconds`` and signals end a crawl at a time-dependent point, of course.

Only the main thread calls MPI, and it waits with non-blocking collectives polled with
``Test`` and short, growing sleeps: MPICH busy-polls inside blocking ones and would starve
the robots and the other ranks (DESIGN.md, "Known pitfalls").
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash
from mpi4py import MPI

from bspcrawl import checkpoint
from bspcrawl.frontier import Frontier
from bspcrawl.index.archive import Archive, previous_hosts
from bspcrawl.index.store import STATS_DTYPE, RankStore
from bspcrawl.index.terms import EMPTY, count_terms
from bspcrawl.index.window import DEFERRED, Window
from bspcrawl.partition import Directory, Link, pack, unpack
from bspcrawl.progress import Progress
from bspcrawl.robots.fetcher import Fetcher, FetchResult
from bspcrawl.robots.links import LinkCache, parse_html
from bspcrawl.robots.robotstxt import header_directives
from bspcrawl.settings import Settings
from bspcrawl.urls import host_hash, host_key, resolve

POLL_MIN, POLL_MAX = 20e-6, 1e-3  # backoff between Test() calls on a pending collective, s
STOP_FILE = "stop"  # ``bspcrawl stop DIR`` creates DIR/stop: the crawl stops soon after
STOP_CHECK_S = 0.5  # seconds between looks for the stop file
MAX_RESCHEDULES = 2  # robots a job may outlive (hang) before it is committed as an error
IDLE_SLEEP = 0.005  # s, a superstep's pause when all of a rank's hosts are resting

# The counters every rank contributes to the global sum at sync, in this order.
GLOBAL = ("pages", "pages_ok", "errors", "bytes", "frontier", "unreleased", "urls_out",
          "signal", "timeout", "seen")


def wait(requests: list[MPI.Request]) -> None:
    """Wait for non-blocking requests without MPICH's busy polling.

    Non-blocking collectives progress only inside Test(), so polling starts fast and backs
    off exponentially to 1 ms sleeps (measured here, 2 ranks: 0.6 ms a superstep exchange
    against 2.6 ms with fixed 0.5 ms sleeps, and less CPU).
    """
    delay = 0.0
    while not MPI.Request.Testall(requests):
        time.sleep(delay)
        delay = min(POLL_MAX, delay * 2 or POLL_MIN)


def exchange(comm: MPI.Comm, outboxes: list[list[Link]], counters: np.ndarray,
             new_hosts: np.ndarray) -> tuple[list[Link], np.ndarray, np.ndarray]:
    """send_messages + sync: deliver each rank its links, sum ``counters`` over ranks and
    tell every rank the hosts each one found (``new_hosts``, int64 host hashes).

    One Ialltoall carries the byte counts, the number of new hosts and every rank's
    counters (so all ranks compute the same sums); an Iallgatherv of the new hosts and the
    Ialltoallv of the URL bytes follow only if some rank has any. Returns the links
    received, the sums and every rank's new hosts.
    """
    buf, counts = pack(outboxes)
    size = comm.Get_size()
    send = np.empty((size, 3 + counters.size), dtype=np.int64)
    send[:, 0], send[:, 1], send[:, 2], send[:, 3:] = counts, counts.sum(), len(new_hosts), \
        counters
    recv = np.empty_like(send)
    wait([comm.Ialltoall(send, recv)])
    recv_counts, totals = recv[:, 0].copy(), recv[:, 3:].sum(axis=0)
    found = recv[:, 2].copy()
    hosts = np.empty(int(found.sum()), dtype=np.int64)
    if len(hosts):
        displ = np.concatenate(([0], np.cumsum(found)[:-1]))
        wait([comm.Iallgatherv(new_hosts, [hosts, (found, displ), MPI.INT64_T])])
    if not recv[:, 1].any():
        return [], totals, hosts
    rbuf = np.empty(int(recv_counts.sum()), dtype=np.uint8)
    sdispl = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rdispl = np.concatenate(([0], np.cumsum(recv_counts)[:-1]))
    wait([comm.Ialltoallv([buf, (counts, sdispl), MPI.BYTE],
                          [rbuf, (recv_counts, rdispl), MPI.BYTE])])
    return unpack(rbuf, recv_counts), totals, hosts


def is_html(result: FetchResult) -> bool:
    """True for a 2xx response that should be parsed as HTML."""
    ct = result.content_type.lower()
    if ct:
        return ct.startswith(("text/html", "application/xhtml"))
    return b"<html" in result.body[:1024].lower()


def charset(content_type: str) -> str | None:
    """The ``charset`` parameter of a Content-Type header, if any."""
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip(' "'):
            return value.strip(' "')
    return None


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
    state (arrays, attributes) as written by the crawl that stopped."""

    superstep: int
    states: list[tuple[dict[str, np.ndarray], dict]]


class Crawl:
    """One rank's scheduler: frontier, window, robots and index, driven superstep by step."""

    def __init__(self, comm: MPI.Comm, settings: Settings, out: Path, seeds: list[str],
                 progress: Progress | None = None, resume: Resume | None = None) -> None:
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        self.settings, self.out, self.seeds = settings, out, seeds
        self.frontier = Frontier(settings)
        self.window = Window(settings.fetch_robots)
        at = resume.superstep if resume else None
        self.archive = Archive(out, self.rank, warc=not settings.index_no_warc,
                               revisits=bool(settings.recrawl or settings.crawl_revisit_after))
        self.store = RankStore(out, self.rank, self.size, settings.to_dict(),
                               settings.index_flush_pages, resume_at=at, archive=self.archive)
        self.directory = Directory(self.size)  # every rank deals the seeds' hosts alike
        self.directory.assign(host_hash(host_key(u)) for u in seeds)
        if settings.recrawl and resume is None:
            self.directory.assign(previous_hosts(Path(settings.recrawl)).tolist())
            self.store.carry(Path(settings.recrawl), self.directory)
        self.orphans: list[RankStore] = []  # rank files of a larger P, closed by rank 0
        self.cache = LinkCache()
        self.inbox = self.directory.bucket([Link(u) for u in seeds])[0][self.rank]
        self.held: list[Link] = []  # links to hosts not dealt yet, sent next superstep
        self.progress = progress
        self.counters = {"window/deferred": 0, "window/late": 0, "window/rescheduled": 0,
                         "robots/replaced": 0}
        self.reschedules: dict[tuple[int, int], int] = {}  # (seq, index) -> robots it outlived
        self.superstep = 0
        self.last_checkpoint: int | None = None
        self.stop_requested = ""
        self.next_stop_check = 0.0
        self.wait_s = 0.0
        if resume:
            self._restore(resume)

    def _restore(self, resume: Resume) -> None:
        """Continue from a checkpoint; with another P, take this rank's share of them all."""
        same = len(resume.states) == self.size
        mine = [resume.states[self.rank]] if same else resume.states
        arrays = [a for a, _ in mine]
        self.directory = Directory.restore(arrays[0]["directory"], self.size)
        self.frontier.restore(arrays, self.rank, self.directory)
        self.inbox = []
        for name in ("inbox", "held"):  # with another P, held links go to their owners
            links = [Link(u, int(d), int(h)) for a in arrays for u, d, h in zip(
                a[f"{name}_url"].astype(str).tolist(), a[f"{name}_depth"].tolist(),
                a[f"{name}_hops"].tolist(), strict=True)]
            if name == "held" and same:
                self.held = links
            else:
                self.inbox += [x for x in links if self.directory.owner(x.url) == self.rank]
        self.window = Window(self.settings.fetch_robots,
                             max(attrs["next_seq"] for _, attrs in mine))
        if same:
            self.frontier.counters.update(mine[0][1]["frontier"])
            self.counters.update(mine[0][1]["crawl"])
        if self.rank == 0:
            self.orphans = [RankStore(self.out, r, self.size, self.settings.to_dict(), 1,
                                      resume_at=resume.superstep)
                            for r in range(self.size, len(resume.states))]
        self.superstep = self.last_checkpoint = resume.superstep
        self.superstep += 1

    def run(self) -> Outcome:
        """Crawl until every frontier is empty and nothing is in flight, or a limit;
        checkpoint every ``checkpoint_every`` supersteps and at the end."""
        s = self.settings
        start = time.monotonic()
        self.fetcher = Fetcher(s)
        old = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT,
                                                                  signal.SIGTERM)}
        stopping, stopped = "", ""
        try:
            while not stopped:
                k = self.superstep
                self.wait_s = 0.0
                urls_in = len(self.inbox)
                new = self.frontier.receive(self.inbox)                   # receive_messages
                links = self.step(draining=bool(stopping))                # run
                boxes, held = self.directory.bucket(self.held + links)
                sent = sum(map(len, boxes))
                local = self._counters(sent + len(held), start)
                t0 = time.monotonic()
                hosts = np.fromiter({host_hash(host_key(x.url)) for x in held}, np.int64)
                self.inbox, totals, dealt = exchange(self.comm, boxes, local, hosts)
                self.directory.assign(dealt.tolist())
                self.held = held
                self.wait_s += time.monotonic() - t0
                g = dict(zip(GLOBAL, totals.tolist(), strict=True))
                self._record(k, start, urls_in, len(links), sent - len(boxes[self.rank]), new)
                if self.progress:
                    self.progress.update(k, g)
                if g["frontier"] == 0 and g["unreleased"] == 0 and g["urls_out"] == 0:
                    stopped = stopping or "done"
                elif stopping and g["unreleased"] == 0:
                    stopped = stopping
                elif not stopping:
                    stopping = self._limit(g)
                if stopped or (s.checkpoint_every and k % s.checkpoint_every == 0):
                    self._checkpoint(k)
                elif self.store.buffered >= s.index_flush_pages:
                    self.store.seal(k)
                self.superstep += 1
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
            self.fetcher.close()
            self.archive.close()
        self.store.close(k)
        for orphan in self.orphans:
            orphan.close(k)
        return Outcome(self.superstep, g["pages"], g["pages_ok"], g["errors"], g["bytes"],
                       g["seen"], g["frontier"], time.monotonic() - start, stopped)

    def _checkpoint(self, k: int) -> None:
        """Seal the index segment of superstep ``k`` and write this rank's state; rank 0
        marks the checkpoint complete once every rank has written it."""
        self._fault(k, "before")
        self.store.seal(k)
        unfinished = [j for sched in self.window.outstanding.values() for j in sched.jobs]
        arrays = self.frontier.snapshot(unfinished + list(self.window.deferred.values()))
        for name, links in (("inbox", self.inbox), ("held", self.held)):
            arrays.update({f"{name}_url": np.array([x.url for x in links], dtype=object),
                           f"{name}_depth": np.array([x.depth for x in links], dtype=np.int16),
                           f"{name}_hops": np.array([x.hops for x in links], dtype=np.int16)})
        arrays["directory"] = self.directory.snapshot()
        checkpoint.write(self.out, self.rank, k, arrays, {
            "next_seq": self.window.next_seq, "frontier": self.frontier.counters,
            "crawl": self.counters})
        self._fault(k, "during")
        wait([self.comm.Ibarrier()])
        if self.rank == 0:
            checkpoint.mark_complete(self.out, k, self.size, {
                "settings": self.settings.to_dict(), "seeds": self.seeds})
        wait([self.comm.Ibarrier()])
        checkpoint.prune(self.out, self.rank, {k, self.last_checkpoint})
        self.last_checkpoint = k
        self._fault(k, "after")

    def _fault(self, k: int, point: str) -> None:
        """Fault injection for the tests: BSPCRAWL_FAULT=rank:superstep:point (point:
        before, during or after a checkpoint) kills this process there with SIGKILL."""
        if os.environ.get("BSPCRAWL_FAULT") == f"{self.rank}:{k}:{point}":
            os.kill(os.getpid(), signal.SIGKILL)

    def step(self, draining: bool) -> list[Link]:
        """run: commit what the window releases, then open this superstep's schedule."""
        links: list[Link] = []
        self._supervise()
        while self.window.full() or (draining and len(self.window)):
            seq = self.window.base
            self._wait_for(seq, draining)
            for sched in self.window.release(upto=seq):
                for result in sched.results:
                    if result is not DEFERRED:
                        self._commit(result, links)
        self._collect(0.05 if draining and self.window.deferred else None)
        for result in self.window.late:  # stragglers deferred earlier, committed once
            self._commit(result, links)
        self.counters["window/late"] += len(self.window.late)
        self.window.late.clear()
        if not draining:
            jobs = self.frontier.next_jobs(self.window.next_seq)
            self.window.open(jobs, time.time())
            cached = self.archive.plan([j for j in jobs if not j.robots], time.time())
            fresh = {id(r.job) for r in cached}
            self.fetcher.submit([j for j in jobs if id(j) not in fresh] if fresh else jobs)
            for r in cached:
                self.window.deliver(r.job.seq, r.job.index, r)
            if not jobs and not links and (self.frontier.resting or self.frontier.revisits):
                time.sleep(IDLE_SLEEP)  # every host with URLs is resting: do not spin
        return links

    def _collect(self, timeout: float | None = None) -> None:
        """Deliver every finished result to the window (waiting up to ``timeout`` s for
        the first one; None: do not wait)."""
        result = self.fetcher.get(timeout)
        while result is not None:
            self.window.deliver(result.job.seq, result.job.index, result)
            result = self.fetcher.get()

    def _wait_for(self, seq: int, draining: bool) -> None:
        """Deliver results to the window until schedule ``seq`` is acknowledged, or defer
        its stragglers after ``window_straggler_timeout`` (not while draining)."""
        t0 = time.monotonic()
        timeout = self.settings.window_straggler_timeout
        self._collect()
        while not self.window.acknowledged(seq):
            self._supervise()
            if timeout and not draining and time.monotonic() - t0 >= timeout:
                self.counters["window/deferred"] += self.window.defer(seq)
                break
            self._collect(0.05)
        self.wait_s += time.monotonic() - t0

    def _supervise(self) -> None:
        """Replace a robots thread that died or hung (Dominos' worker regeneration) and
        reschedule every job it had not answered; a job given up on by
        ``MAX_RESCHEDULES`` robots is committed as the error ``robot_hang``."""
        stall = self.settings.window_straggler_timeout or 30.0
        if self.fetcher.healthy(stall):
            return
        self._collect()
        self.fetcher.close(wait=0.0)
        self.fetcher = Fetcher(self.settings)
        self.counters["robots/replaced"] += 1
        unanswered = [(s.seq, i, job) for s in self.window.outstanding.values()
                      for i, job in enumerate(s.jobs) if s.results[i] is None]
        unanswered += [(seq, i, job) for (seq, i), job in self.window.deferred.items()]
        again = []
        for seq, i, job in unanswered:
            tries = self.reschedules[(seq, i)] = self.reschedules.get((seq, i), 0) + 1
            if seq in self.window.outstanding:
                self.window.outstanding[seq].reschedule_count += 1
            if tries > MAX_RESCHEDULES:
                self.window.deliver(seq, i, FetchResult(job, error="robot_hang"))
            else:
                again.append(job)
        self.counters["window/rescheduled"] += len(again)
        self.fetcher.submit(again)

    def _commit(self, result: FetchResult, links: list[Link]) -> None:
        """Commit one result to the index (unless it is retried); collect its links."""
        if not self.frontier.done(result) or result.job.robots:
            return
        job = result.job
        redirect, found, terms = "", [], EMPTY
        self.archive.restore(result, job.fp)
        if result.location:
            redirect = resolve(result.location, job.url) or ""
            if redirect:
                links.append(Link(redirect, job.depth, job.hops + 1))
        elif (200 <= result.status < 300 or result.revisit) and is_html(result):
            page = parse_html(result.body, job.url, self.cache,
                              charset=charset(result.content_type))
            header = header_directives(result.headers.get("x-robots-tag", ""),
                                       self.settings.agent_token)
            if "nofollow" not in header and "none" not in header:
                found = page.links
            if not page.noindex and "noindex" not in header and "none" not in header:
                terms = count_terms(page.text)
            links.extend(Link(u, job.depth + 1) for u in found)
        content_fp = xxhash.xxh3_64_intdigest(result.body) if result.body else 0
        self.archive.record(result, job.fp, host_hash(job.host), content_fp)
        after = self.settings.crawl_revisit_after
        if after and (200 <= result.status < 300 or result.revisit):
            self.frontier.revisit_later(Link(job.url, job.depth, job.hops), job.fp,
                                        time.monotonic() + after)
        self.store.commit(result, job.fp, redirect, self.frontier.fingerprints(found).tolist(),
                          terms, content_fp)

    def _counters(self, urls_out: int, start: float) -> np.ndarray:
        if self.rank == 0 and time.monotonic() >= self.next_stop_check:
            self.next_stop_check = time.monotonic() + STOP_CHECK_S  # a stat can cost 1 ms
            if (self.out / STOP_FILE).exists():
                self.stop_requested = self.stop_requested or "stop file"
        # page jobs not committed yet (a deferred one too); a robots.txt job is not a page,
        # and while one is out its host's URLs wait in the frontier
        unreleased = sum(not j.robots for s in self.window.outstanding.values()
                         for j in s.jobs) + len(self.window.deferred)
        limit = self.settings.crawl_max_seconds
        timeout = self.rank == 0 and limit and time.monotonic() - start >= limit
        st = self.store
        return np.array([st.docs, st.pages_ok, st.errors, st.bytes, len(self.frontier),
                         unreleased, urls_out, bool(self.stop_requested), bool(timeout),
                         len(self.frontier.seen)], dtype=np.int64)

    def _limit(self, g: dict[str, int]) -> str:
        """The reason to stop scheduling, agreed by all ranks from global counters."""
        if g["signal"]:
            return "signal"
        if g["timeout"]:
            return "max_seconds"
        mp = self.settings.crawl_max_pages
        if mp and g["pages"] + g["unreleased"] >= mp:
            return "max_pages"
        return ""

    def _record(self, superstep: int, start: float, urls_in: int, urls_out: int,
                remote: int, new: int) -> None:
        c, st = self.frontier.counters, self.store
        row = np.zeros((), dtype=STATS_DTYPE)
        row[()] = (self.rank, superstep, time.monotonic() - start, st.docs, st.pages_ok,
                   st.errors, st.bytes, len(self.frontier), self.window.in_flight(),
                   len(self.frontier.seen), urls_in, urls_out, remote, new,
                   c["frontier/duplicates"], c["frontier/robots_denied"],
                   c["frontier/filtered"] + c["frontier/host_cap"] + c["frontier/too_deep"]
                   + c["frontier/too_many_hops"], c["fetch/retried"],
                   self.counters["window/deferred"], self.counters["window/late"],
                   self.counters["window/rescheduled"], self.counters["robots/replaced"],
                   self.wait_s)
        self.store.add_stats(row)

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.stop_requested:  # a second signal: stop at once
            raise KeyboardInterrupt
        self.stop_requested = signal.Signals(signum).name

"""One rank's frontier: seen set, backlog, CBT priority queue, per-host state and pending
queue Q.

Marin et al. (2008), section 2: each superstep the scheduler extracts the top R URLs from
its priority queue; URLs that cannot be scheduled now wait in a pending queue Q. Here the
URLs waiting are records in the backlog's logs, one per priority, in RAM up to
``queue_memory_budget`` and on disk past it (``backlog.py``); the CBT orders the logs'
heads (:meth:`Frontier._load`), and Q is one FIFO of records per host:

- a host's first job is its robots.txt; its URLs wait in Q until that job is committed
  (RFC 9309: 2xx parsed, 4xx allow all, 5xx or no answer: retried with backoff up to
  ``robotstxt_retries`` times while the URLs wait, then disallow all); rules are refetched
  after ``robotstxt_ttl``;
- hosts that can take a job are served round-robin, one URL each, before the CBT's top R;
  a schedule holds at most R jobs; unpaced hosts with long queues then get more jobs in
  proportion to their queue (:meth:`Frontier._share`), so big sites keep pace;
- an *unpaced* host (no delay rule, see robots/politeness.py) may have jobs in each
  outstanding schedule: the fetcher runs them one at a time, in order. A *paced* host has
  one job at a time and rests after it (delay, k x response time, Retry-After) before the
  next is scheduled, so the window never waits for politeness;
- a URL answered 429 or 503 goes back to the front of its host's Q, up to
  ``politeness_retries`` times, and is committed only with its final answer;
- with ``crawl_revisit_after``, a page committed is put back into the CBT that long
  after (:meth:`Frontier.revisit_later`): a crawl that revisits never runs out of URLs and
  ends at a limit or a stop.

Limits apply when a URL arrives, so that they bound memory too: its length, path shape
(``urls.PathTraps``), depth, redirect hops, and its host's and registered domain's budgets
(``budgets.py``; revisits and retries are not arrivals).

For unpaced hosts that answer, every decision depends only on the order of operations,
never on the clock, so crawls with the same seeds, settings and P schedule the same URLs in
the same order. Priorities: shallower first (``-depth``), ties broken by the CBT (id).
"""

from __future__ import annotations

import heapq
import math
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bspcrawl import journal
from bspcrawl.backlog import Backlog, files_of, parse, record, replay
from bspcrawl.budgets import Budgets
from bspcrawl.cbt import CBT
from bspcrawl.counters import Stats
from bspcrawl.messages import FetchJob, FetchResult, Link
from bspcrawl.partition import Directory, links_from_arrays, links_to_arrays
from bspcrawl.robots.politeness import RETRY_STATUSES, Politeness, unreachable
from bspcrawl.robots.robotstxt import RobotsRules
from bspcrawl.seen import SeenSet
from bspcrawl.settings import Settings
from bspcrawl.urls import PathTraps, host_key, key_fingerprints, strip_pattern


@dataclass(slots=True)
class Host:
    """Per-host scheduling state (all hosts a rank owns), and its part of Q: the records
    (``backlog.record``) of its URLs in one ``bytearray`` from ``head`` on, so that a URL
    in Q costs its record, not Python objects (None when it has none)."""

    rules: RobotsRules | None = None
    robots_txt: bytes = b""  # what applies of the robots.txt (RobotsRules.source), kept
    # for checkpoints: the group for us, not the whole file (up to 500 KiB)
    rules_until: float = 0.0  # monotonic time the rules expire
    robots_failures: int = 0
    delay: float = 0.0  # max(min host delay, Crawl-delay)
    ready_at: float = 0.0  # monotonic time before which it gets no job (rest, backoff)
    outstanding: int = 0  # jobs scheduled and not yet committed
    robots_in_flight: bool = False
    queued: bool = False  # in Frontier.active or Frontier.resting
    waiting: int = 0  # URLs in its Q
    q: bytearray | None = None
    head: int = 0

    def push(self, data: bytes, front: bool = False) -> None:
        """Add one record to the end of its Q, or to the front."""
        if self.q is None:
            self.q, self.head = bytearray(data), 0
        elif front:
            self.q[self.head:self.head] = data
        else:
            self.q += data
        self.waiting += 1

    def pop(self) -> tuple[int, Link]:
        """Take the first URL of its Q: (fingerprint, link)."""
        assert self.q is not None
        fp, link, self.head = parse(self.q, self.head)
        self.waiting -= 1
        if not self.waiting:
            self.q, self.head = None, 0
        elif self.head > 4096 and 2 * self.head > len(self.q):
            del self.q[:self.head]
            self.head = 0
        return fp, link

    def first(self) -> Link:
        """The first URL of its Q."""
        assert self.q is not None
        return parse(self.q, self.head)[1]

    def records(self) -> bytes:
        """Its Q's records, in order."""
        return b"" if self.q is None else bytes(self.q[self.head:])


COMPACT = 0.5  # a checkpoint is full once the URLs seen since the last full one are more
# than this fraction of those seen then (a resume reads the base and at most this much more)
RULES_SHARED = 4096  # parsed robots.txt kept by their bytes, shared by hosts (an empty
# one, 404, is most hosts': ~1.5 KB of parser each)
ALLOW_ALL = b""  # an empty robots.txt allows everything (RFC 9309 2.2.2)
DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"


def robots_url(url: str) -> str:
    """The robots.txt URL of ``url``'s origin."""
    scheme, _, rest_ = url.partition("://")
    return f"{scheme}://{rest_.split('/', 1)[0]}/robots.txt"


class Frontier:
    """URLs a rank owns and has not scheduled yet, and the hosts they belong to.

    API: :meth:`receive` links, :meth:`next_jobs` for a schedule, :meth:`done` for each
    result to commit; ``len()`` counts URLs waiting (backlog, CBT, Q and revisits);
    :meth:`snapshot` and :meth:`restore` for checkpoints, :meth:`pin` what they refer to.
    Counters go to ``stats`` (``frontier/*``, ``robotstxt/*``, ``fetch/retried``);
    ``clock`` is the monotonic clock politeness reads. The seen set (``seen.py``) spills to
    ``seen_dir`` past ``queue_seen_memory`` bytes; the backlog (``backlog.py``) and the seen
    set's journal (``journal.py``) live in ``backlog_dir``, the backlog's records in RAM up
    to ``queue_memory_budget`` bytes.

    A URL accepted goes to the backlog, to the log of its priority; the CBT holds the
    first records of each log (:meth:`_load`: at least the R about to be extracted, so
    that the CBT's top R are the top R of all); extracted, a URL waits in its host's Q.
    CBT ids are a counter, so within a priority the CBT keeps the logs' order: first
    come, first served. The order depends on the budget in no way.

    Invariants (:meth:`_check`): every URL waiting is in exactly one place, the backlog,
    the CBT (with its link in ``heads``) or one host's Q; every one of them is in the seen
    set; ``pending`` counts the URLs in Q; ``loaded`` counts the CBT's URLs per priority;
    a host is on the round-robin or the resting heap at most once, exactly when
    ``queued``; with wall-clock politeness on, a host has at most one job out; a host
    whose robots.txt is in flight has that job out.
    """

    def __init__(self, settings: Settings, stats: Stats | None = None,
                 clock: Callable[[], float] = time.monotonic, ranks: int = 1,
                 seen_dir: Path | None = None, backlog_dir: Path | None = None) -> None:
        self.settings = settings
        self.stats = Stats() if stats is None else stats
        self.clock = clock
        self.politeness = Politeness.from_settings(settings)
        self.cbt = CBT(bucket_size=settings.queue_bucket)
        self.seen = SeenSet(settings.queue_seen_memory, seen_dir)
        self.backlog = Backlog(backlog_dir, settings.queue_memory_budget)
        self.journal = journal.Journal(backlog_dir)
        self.base: journal.Mark | None = None  # the journal's end at the last full snapshot
        self.base_len = 0  # URLs seen then
        self.heads: dict[int, tuple[int, Link]] = {}  # CBT id -> (fingerprint, link)
        self.loaded: dict[float, int] = {}  # priority -> URLs of it in the CBT
        self.next_id = 0  # the next CBT id
        self.touched: set[str] = set()  # hosts changed since the last full snapshot
        self.wall = time.time  # the clock snapshots are dated by (across processes)
        self.rules: dict[bytes, tuple[RobotsRules, float]] = {}  # robots.txt -> its rules
        # and the delay they imply, shared by the hosts that answered the same bytes
        self.retries: dict[int, int] = {}  # fingerprint -> 429/503 answers so far
        self.hosts: dict[str, Host] = {}
        self.budgets = Budgets(settings.crawl_max_host_pages, settings.crawl_max_domain_pages,
                               ranks)
        self.active: deque[str] = deque()  # hosts that may get a job now, round-robin
        self.resting: list[tuple[float, str]] = []  # (ready_at, host): heap of resting hosts
        self.pending = 0
        self.revisits: list[tuple[float, int, str, int, int]] = []  # heap: (due, fp, url,
        self.revisiting: set[int] = set()  # depth, hops); fps put back by a revisit
        self.strip = strip_pattern(settings.url_strip_params)
        self.traps = PathTraps(settings.url_max_segments, settings.url_max_repeats)
        self.blacklist = (re.compile("|".join(f"(?:{b})" for b in settings.url_blacklist))
                          if settings.url_blacklist else None)

    def __len__(self) -> int:
        return len(self.backlog) + len(self.cbt) + self.pending + len(self.revisits)

    def revisit_later(self, link: Link, fp: int, due: float) -> None:
        """Fetch ``link`` (fingerprint ``fp``) again at monotonic time ``due``."""
        heapq.heappush(self.revisits, (due, fp, link.url, link.depth, link.hops))

    def _revisit_due(self, now: float) -> None:
        """Put the revisits due by ``now`` into the backlog."""
        while self.revisits and self.revisits[0][0] <= now:
            _, fp, url, depth, hops = heapq.heappop(self.revisits)
            if fp not in self.revisiting:  # (only a revisit puts a URL back)
                self.revisiting.add(fp)
                self.backlog.put(-float(depth), [record(fp, Link(url, depth, hops))])

    def receive(self, links: list[Link]) -> int:
        """Insert the unseen links into the CBT; returns how many were new
        (``frontier/new``).

        Links must be canonical (every URL that travels comes from ``urls.resolve`` or
        ``urls.parse``), so they are fingerprinted as they are.
        """
        s, budgets = self.settings, self.budgets
        ids: list[int] = []
        records: dict[float, list[bytes]] = {}  # priority -> records
        fps = self.fingerprints([x.url for x in links])
        known = self.seen.contains_batch(fps)  # first: most links are known, and known
        self.stats["frontier/duplicates"] += int(known.sum())  # ones passed the filters
        unseen = np.flatnonzero(~known).tolist()
        taken: set[int] = set()  # accepted from this batch: a repeat is a duplicate
        for i, fp in zip(unseen, fps[unseen].tolist(), strict=True):
            link = links[i]
            if fp in taken:
                self.stats["frontier/duplicates"] += 1
            elif len(link.url) > s.url_max_length or (
                    self.blacklist and self.blacklist.search(link.url)):
                self.stats["frontier/filtered"] += 1
            elif self.traps.caught(link.url):
                self.stats["frontier/trap_path"] += 1
            elif s.crawl_max_depth and link.depth > s.crawl_max_depth:
                self.stats["frontier/too_deep"] += 1
            elif link.hops > s.fetch_max_redirects:
                self.stats["frontier/too_many_hops"] += 1
            elif spent := budgets.take(link.url):
                self.stats[spent] += 1
            else:
                taken.add(fp)  # (its anchor text was credited: not kept while queued)
                records.setdefault(-float(link.depth), []).append(record(fp, link))
                ids.append(fp)
        if ids:
            self.seen.add_batch(ids)
            self.journal.append(np.array(ids, np.int64))
            for prio, recs in records.items():
                self.backlog.put(prio, recs)
        self.stats["frontier/new"] += len(ids)
        return len(ids)

    def fingerprints(self, urls: list[str]) -> np.ndarray:
        """Seen-set keys (int64) of canonical URLs: tracking and session parameters cut."""
        return key_fingerprints(urls, self.strip)

    def next_ready(self) -> float:
        """When the first resting host may get a job, or the first revisit is due
        (``inf``: none)."""
        return min(self.resting[0][0] if self.resting else math.inf,
                   self.revisits[0][0] if self.revisits else math.inf)

    def next_jobs(self, seq: int, now: float | None = None) -> list[FetchJob]:
        """The jobs of schedule ``seq``: one per host that can take one, Q before the CBT,
        then more for the unpaced hosts with long queues."""
        now = self.clock() if now is None else now
        if self.revisits:
            self._revisit_due(now)
        while self.resting and self.resting[0][0] <= now:
            self.active.append(heapq.heappop(self.resting)[1])
        limit = self.settings.queue_batch
        jobs: list[FetchJob] = []
        served: dict[str, None] = {}  # hosts given a job, in order (a set's is random)
        for _ in range(len(self.active)):
            if len(jobs) >= limit:
                break
            key = self.active.popleft()
            host = self.hosts[key]
            host.queued = False
            if self._can_serve(host, now):
                self._serve(key, seq, jobs, now)
                served[key] = None
            else:
                self._enqueue(key, now)
        room = limit - len(jobs)
        if room > 0 and self.pending < self.settings.queue_pending_max:
            self._load(room)
            ids, prios = self.cbt.extract_many(room)
            for prio, n in zip(*np.unique(prios, return_counts=True), strict=True):
                self.loaded[float(prio)] -= int(n)
            for i in ids.tolist():
                fp, link = self.heads.pop(i)
                key = host_key(link.url)
                host = self.hosts.get(key)
                if host is None:
                    host = self.hosts[key] = Host(delay=self.politeness.delay(None))
                    self.touched.add(key)
                host.push(record(fp, link))
                self.pending += 1
                if key not in served and self._can_serve(host, now):
                    self._serve(key, seq, jobs, now)
                    served[key] = None
                else:
                    self._enqueue(key, now)
        self._share(list(served), seq, jobs, now)
        return jobs

    def _load(self, room: int) -> None:
        """Put into the CBT the next records of each priority of the backlog until it
        holds ``room`` of that priority: then its top ``room`` are the top of all (a
        record of the backlog comes after those of its priority in the CBT)."""
        for prio in self.backlog.waiting():
            have = self.loaded.get(prio, 0)
            if have < room:
                self._to_cbt(prio, self.backlog.take(prio, room - have))

    def _to_cbt(self, prio: float, taken: list[tuple[int, Link]]) -> None:
        """Insert URLs (fingerprint, link) of priority ``prio`` into the CBT, after every
        URL of that priority there."""
        if not taken:
            return
        ids = np.arange(self.next_id, self.next_id + len(taken), dtype=np.int64)
        self.next_id += len(taken)
        self.heads.update(zip(ids.tolist(), taken, strict=True))
        self.loaded[prio] = self.loaded.get(prio, 0) + len(taken)
        self.cbt.insert_many(ids, np.full(len(taken), prio))

    def _share(self, served: list[str], seq: int, jobs: list[FetchJob], now: float) -> None:
        """Give the unpaced hosts with long queues more jobs in this schedule.

        With one job per host and schedule, every host advances at the same pace, one page
        per superstep, and the biggest sites are left for the crawl's tail. So a host gets
        jobs in proportion to its queue (``round(queued / mean queued)`` of the hosts
        served), at most ``n // r`` with ``n`` hosts served and ``r`` fetch workers: its
        jobs run one after another, and that many take about as long as the workers take for
        the whole schedule, so the window does not wait for them. With fewer hosts than
        workers, each host has a connection of its own and would advance one page a
        superstep: then each may fill its part of the schedule, ``R // n`` jobs, so a few
        big sites go at the pace of their servers, not of the supersteps. Counts only, no
        clock: the schedule stays reproducible.
        """
        n, r = len(served), self.settings.fetch_workers
        if not n:
            return
        queued = [self.hosts[key].waiting for key in served]
        if n < r:
            quota = [self.settings.queue_batch // n] * n
        else:
            mean = sum(queued) / n
            if n // r < 2 or not mean:
                return
            quota = [min(n // r, round(q / mean)) for q in queued]
        for key, k in zip(served, quota, strict=True):
            host = self.hosts[key]
            for _ in range(k - 1):
                if len(jobs) >= self.settings.queue_batch or self._paced(host) or \
                        not self._can_serve(host, now):
                    break
                self._serve(key, seq, jobs, now)

    def _paced(self, host: Host) -> bool:
        return self.politeness.paced or host.delay > 0

    def _can_serve(self, host: Host, now: float) -> bool:
        """May the host get a job now (ignoring whether it got one in this schedule)?"""
        if not host.waiting or host.robots_in_flight or host.ready_at > now:
            return False
        return host.outstanding == 0 or not self._paced(host) and host.rules is not None

    def _serve(self, key: str, seq: int, jobs: list[FetchJob], now: float) -> None:
        """Give the host one job: its robots.txt if unknown or expired, else its first
        allowed URL in Q (dropping disallowed ones)."""
        host = self.hosts[key]
        if host.rules is None or (host.rules_until and now >= host.rules_until):
            host.rules, host.robots_in_flight = None, True
            self.touched.add(key)  # its rules are gone: an incremental checkpoint says so
            host.outstanding += 1
            url = host.first().url
            jobs.append(FetchJob(seq, len(jobs), robots_url(url), key, host.delay, True,
                                 attempt=host.robots_failures))
            return
        while host.waiting:
            fp, link = host.pop()
            self.pending -= 1
            self.revisiting.discard(fp)
            if host.rules.allowed(link.url):
                host.outstanding += 1
                jobs.append(FetchJob(seq, len(jobs), link.url, key, host.delay, False,
                                     link.depth, link.hops, fp=fp,
                                     attempt=self.retries.get(fp, 0)))
                break
            else:
                self.stats["frontier/robots_denied"] += 1
        self._enqueue(key, now)

    def _enqueue(self, key: str, now: float) -> None:
        """Put a host that may get a job on the round-robin, or on the resting heap."""
        host = self.hosts[key]
        if host.queued or not host.waiting or host.robots_in_flight:
            return
        if self._paced(host) and host.outstanding:
            return  # re-enqueued when its job is committed
        host.queued = True
        if host.ready_at > now:
            heapq.heappush(self.resting, (host.ready_at, key))
        else:
            self.active.append(key)

    def done(self, result: FetchResult) -> bool:
        """Account for a finished job; False when its URL will be fetched again instead
        of committed (a 429/503 with retries left, or a robots.txt job: never a page).

        The host rests by the rule of ``robots/politeness.py``, the same one the fetch
        workers apply; for an unpaced host that answers, that is no rest at all."""
        job = result.job
        host = self.hosts[job.host]
        host.outstanding -= 1
        self.touched.add(job.host)  # its rest, robots.txt or failures may change
        now = self.clock()
        commit = not job.robotstxt
        pause = self.politeness.rest(result)
        if pause:  # an unpaced host that answers: no rest, no clock
            host.ready_at = max(host.ready_at, result.ended + pause)
        if job.robotstxt:
            host.robots_in_flight = False
            self._robots(host, result, now)
        elif self.retries or result.status in RETRY_STATUSES:
            fp = job.fp
            tries = self.retries.pop(fp, 0) + 1
            if result.status in RETRY_STATUSES and tries <= self.settings.politeness_retries:
                self.retries[fp] = tries
                host.push(record(fp, Link(job.url, job.depth, job.hops)), front=True)
                self.pending += 1
                self.stats["fetch/retried"] += 1
                commit = False
        self._enqueue(job.host, now)
        return commit

    def _robots(self, host: Host, result: FetchResult, now: float) -> None:
        """RFC 9309 2.3.1: 2xx parse, 4xx allow all, 5xx or no answer: retry (the host
        rests by :func:`~bspcrawl.robots.politeness.backs_off`), then disallow all. Sets
        the host's rules and its delay."""
        s = self.settings
        self.stats["robotstxt/fetched"] += 1
        if not unreachable(result):
            # 2xx parsed; 4xx (not 429: unreachable) or more than five redirects:
            # "unavailable", allow all (RFC 9309 2.3.1.2-3). A refused address: allow all
            # too, so that every URL of the host is committed as blocked_address (seen in
            # inspect), not silently denied
            host.robots_failures = 0
            body = result.body if 200 <= result.status < 300 else ALLOW_ALL
        else:
            self.stats["robotstxt/errors"] += 1
            host.robots_failures += 1
            if host.robots_failures <= s.robotstxt_retries:
                return
            body = DISALLOW_ALL
        self._set_rules(host, body, now + s.robotstxt_ttl)
        self.stats["robotstxt/too_costly"] += host.rules.too_costly

    def _set_rules(self, host: Host, robots_txt: bytes, until: float) -> None:
        """Give a host the rules of a robots.txt body, and the delay they imply."""
        shared = self.rules.get(robots_txt)
        if shared is None:
            if len(self.rules) >= RULES_SHARED:
                self.rules.clear()
            rules = RobotsRules.parse(robots_txt, self.settings.agent_token)
            shared = self.rules[robots_txt] = rules, self.politeness.delay(rules.crawl_delay)
        host.rules, host.delay = shared
        host.robots_txt, host.rules_until = host.rules.source, until

    def _check(self) -> None:
        """Assert the invariants of the class docstring (tests call it after every step)."""
        ids, prios = self.cbt.peek(len(self.cbt))
        assert sorted(ids.tolist()) == sorted(self.heads), "a CBT id without its link"
        assert {p: n for p, n in self.loaded.items() if n} == {
            float(p): int(n) for p, n in zip(*np.unique(prios, return_counts=True),
                                             strict=True)}
        assert sum(h.waiting for h in self.hosts.values()) == self.pending
        waiting = list(self.waiting_links())
        assert len(set(waiting)) == len(waiting), "a URL waits in two places"
        assert self.seen.contains_batch(waiting).all(), "a waiting URL not in the seen set"
        assert self.revisiting <= set(waiting)
        self.backlog._check()
        rounds = list(self.active) + [key for _, key in self.resting]
        assert len(rounds) == len(set(rounds)), "a host queued twice"
        assert set(rounds) == {k for k, h in self.hosts.items() if h.queued}
        for host in self.hosts.values():
            assert host.outstanding >= host.robots_in_flight
            assert not self.politeness.paced or host.outstanding <= 1

    def waiting_links(self) -> dict[int, Link]:
        """Every URL waiting to be scheduled (backlog, CBT, Q), by fingerprint; reads the
        backlog's files (tests and tools, not the crawl)."""
        out = {fp: link for _, fp, link in self.backlog.records()}
        out.update(self.heads.values())
        for host in self.hosts.values():
            out.update(_records(host.records()))
        return out

    def snapshot(self, unfinished: list[FetchJob], full: bool | None = True
                 ) -> dict[str, np.ndarray]:
        """The frontier's state as arrays, for a checkpoint. ``unfinished`` (scheduled,
        not committed) page jobs are saved as URLs to fetch again. The backlog's and the
        journal's tails are written to their files and named (``backlog_*``,
        ``journal_*``), not copied; the seen set is written whole (``seen``) only if
        ``full``, or with ``full=None`` when the URLs seen since the last full snapshot
        are more than :data:`COMPACT` of those seen then: else the journal since the last
        full one holds what it gained. Without a full snapshot before, it is full."""
        now = self.clock()
        end = self.journal.mark()
        if full is None:
            full = len(self.seen) - self.base_len > COMPACT * self.base_len
        if full or self.base is None:
            full, self.base, self.base_len = True, end, len(self.seen)
        ids, _ = self.cbt.peek(len(self.cbt))
        front = [record(*self.heads[i]) for i in ids.tolist()]
        front += [record(j.fp, Link(j.url, j.depth, j.hops)) for j in unfinished
                  if not j.robotstxt]
        hosts = list(self.hosts.items() if full else (
            (k, self.hosts[k]) for k in self.touched if k in self.hosts))
        if full:
            self.touched = set()
        later = sorted(self.revisits)
        known = [h.rules is not None for _, h in hosts]
        queued = [(k, h) for k, h in self.hosts.items() if h.waiting]
        return {
            **({"seen": self.seen.to_array()} if full else {}),
            "journal_base": np.array(self.base, np.int64),
            "journal_end": np.array(end, np.int64),
            **self.backlog.marks(),
            "queued": np.frombuffer(b"".join(front), np.uint8),
            "q_host": np.array([k for k, _ in queued], dtype=object),
            "q_records": np.frombuffer(b"".join(h.records() for _, h in queued), np.uint8),
            "q_bytes": np.array([len(h.q) - h.head for _, h in queued], np.int64),
            "q_waiting": np.array([h.waiting for _, h in queued], np.int64),
            "wall": np.array([self.wall()]),
            "retry_fp": np.fromiter(self.retries, np.int64, len(self.retries)),
            "retry_n": np.fromiter(self.retries.values(), np.int64, len(self.retries)),
            "host": np.array([k for k, _ in hosts], dtype=object),
            "robots_txt": np.array([h.robots_txt if k else b"" for (_, h), k
                                    in zip(hosts, known, strict=True)], dtype=object),
            "robots_known": np.array(known, dtype=bool),
            "robots_left": np.array([h.rules_until - now for _, h in hosts]),
            "robots_failures": np.array([h.robots_failures for _, h in hosts], np.int32),
            "ready_left": np.array([max(0.0, h.ready_at - now) for _, h in hosts]),
            **self.budgets.snapshot(),
            **links_to_arrays([Link(*r[2:]) for r in later], "revisit_"),
            "revisit_left": np.array([r[0] - now for r in later], dtype=np.float64),
        }

    def files(self, arrays: dict[str, np.ndarray]) -> set[str]:
        """The names of the files in ``backlog_dir`` a snapshot refers to."""
        return files_of(arrays) | journal.files_of(tuple(arrays["journal_base"]),
                                                   tuple(arrays["journal_end"]))

    def pin(self, names: set[str], oldest_base: journal.Mark) -> None:
        """Keep the files kept checkpoints refer to (:meth:`files`), delete the others no
        longer read: backlog segments read whole, journal segments before
        ``oldest_base``."""
        self.backlog.pin(names)
        self.backlog.collect()
        self.journal.collect(oldest_base)

    def restore(self, states: list[dict[str, np.ndarray]], rank: int,
                directory: Directory, dirs: list[Path] | None = None) -> None:
        """Rebuild from checkpoint states (one per rank of the crawl that wrote them, whose
        backlogs and journals are in ``dirs``, default this rank's), keeping the hosts and
        URLs ``rank`` owns by ``directory``. With one state of this rank's own directory
        the backlog and journal are taken over in place; else they are read and this
        rank's URLs put into its own (then the next snapshot is a full one). With several
        states (P changed) the seen set is their union: fingerprints carry no host, and a
        URL is only ever checked by its owner, so the foreign ones cost memory only. An
        incremental state's ``seen`` is its full base's (``checkpoint.read``)."""
        now = self.clock()
        dirs = dirs or [self.backlog.dir] * len(states)  # type: ignore[list-item]
        here = len(states) == 1 and dirs[0] == self.backlog.dir
        if not here:
            self.backlog.start_after_existing()
            self.journal.start_after_existing()

        def mine_host(key: str) -> bool:
            return directory.rank_of(key) == rank

        self.budgets.restore(states, mine_host)
        for st, where in zip(states, dirs, strict=True):
            mine = len(states) == 1  # the same P: every URL of the state is this rank's
            owned = (lambda url: True) if mine else (lambda url: directory.owner(url) == rank)
            keys = st["seen"]
            if "journal_end" in st:  # sorted, then unsorted keys: two runs to merge
                keys = np.concatenate([keys, journal.read(where, tuple(st["journal_base"]),
                                                          tuple(st["journal_end"]))])
                keys.sort(kind="stable")
            self.seen.add_batch(keys)
            for fp, n in zip(st["retry_fp"].tolist(), st["retry_n"].tolist(), strict=True):
                self.retries[fp] = n
            if "base_host" in st:  # an incremental state: its base's hosts, then its own
                base = {k[5:]: v for k, v in st.items() if k.startswith("base_")}
                self._restore_hosts(base, mine_host, now - float(st["wall"][0] - base["wall"][0]))
            self._restore_hosts(st, mine_host, now)
            if here and "base_host" in st:
                self.touched = set(st["host"].astype(str).tolist())
            if "q_host" in st:
                queues = memoryview(st["q_records"].tobytes())
                at = 0
                for key, size, n in zip(st["q_host"].astype(str).tolist(),
                                        st["q_bytes"].tolist(), st["q_waiting"].tolist(),
                                        strict=True):
                    if mine_host(key):  # its Q, as it was
                        host = self.hosts[key]
                        host.q, host.waiting = bytearray(queues[at:at + size]), n
                        self.pending += n
                    at += size
            self._restore_front(_front(st, self.fingerprints), owned)
            if "backlog_prio" in st:
                if here:
                    self.backlog.adopt(st)
                    self.journal.adopt(tuple(st["journal_end"]))
                    self.base = tuple(st["journal_base"])
                    self.base_len = len(st["seen"])
                else:
                    self._restore_backlog(replay(where, st), owned)
            later = [(x, left) for x, left in zip(links_from_arrays(st, "revisit_"),
                                                  st["revisit_left"].tolist(), strict=True)
                     if owned(x.url)]
            fps = self.fingerprints([x.url for x, _ in later]).tolist()
            for (link, left), fp in zip(later, fps, strict=True):
                self.revisit_later(link, fp, now + left)
        for key, host in self.hosts.items():
            if host.waiting:
                self._enqueue(key, now)

    def _restore_hosts(self, st: dict[str, np.ndarray], mine: Callable[[str], bool],
                       then: float) -> None:
        """The hosts of a state's columns that are ``mine``; its rests and rules' ages were
        counted from ``then`` (on this clock)."""
        delay = self.politeness.delay(None)
        for i, (key, failures, ready, known, left) in enumerate(zip(
                st["host"].astype(str).tolist(), st["robots_failures"].tolist(),
                st["ready_left"].tolist(), st["robots_known"].tolist(),
                st["robots_left"].tolist(), strict=True)):
            if not mine(key):
                continue
            host = self.hosts[key] = Host(robots_failures=failures,
                                          ready_at=then + ready, delay=delay)
            if known:
                self._set_rules(host, bytes(st["robots_txt"][i]), then + left)

    def _restore_front(self, front: list[tuple[int, Link]], owned: Callable[[str], bool]
                       ) -> None:
        """Put a state's URLs that were in the CBT or out into the CBT, in their order,
        before any of the backlog's."""
        by_prio: dict[float, list[tuple[int, Link]]] = {}
        there = {fp for fp, _ in self.heads.values()}
        for fp, link in front:
            if owned(link.url) and fp not in there:
                there.add(fp)
                by_prio.setdefault(-float(link.depth), []).append((fp, link))
        for prio, taken in by_prio.items():
            self._to_cbt(prio, taken)

    def _restore_backlog(self, records: Iterator[tuple[float, int, Link]],
                         owned: Callable[[str], bool]) -> None:
        """Put another rank's backlog records that this rank owns into its own backlog."""
        batch: dict[float, list[bytes]] = {}
        for prio, fp, link in records:
            if owned(link.url):
                batch.setdefault(prio, []).append(record(fp, link))
                if len(batch[prio]) >= 4096:
                    self.backlog.put(prio, batch.pop(prio))
        for prio, recs in batch.items():
            self.backlog.put(prio, recs)


def _records(data: bytes) -> Iterator[tuple[int, Link]]:
    """The (fingerprint, link) of each record of ``data``."""
    at = 0
    while at < len(data):
        fp, link, at = parse(data, at)
        yield fp, link


def _front(st: dict[str, np.ndarray], fingerprints: Callable[[list[str]], np.ndarray]
           ) -> list[tuple[int, Link]]:
    """A state's URLs of the CBT and out (a checkpoint older than the backlog: every URL
    waiting, as link columns)."""
    if "queued" in st:
        return list(_records(st["queued"].tobytes()))
    links = links_from_arrays(st)
    return list(zip(fingerprints([x.url for x in links]).tolist(), links, strict=True))

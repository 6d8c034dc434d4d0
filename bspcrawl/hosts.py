"""The host table: every host a rank owns, its robots.txt rules, its rest and its part of
the pending queue Q (Marin et al. (2008), section 2); the one owner of politeness.

- A host's first job is its robots.txt (RFC 9309); its URLs wait in Q until it is committed.
- Hosts are served round-robin, one URL each; unpaced hosts with long queues get more.
- A paced host (a delay rule, robots/politeness.py) has one job at a time and rests after
  it before the next is scheduled, so the window never waits for politeness.
- A 429 or 503 puts the URL back at the front of its host's Q, up to ``politeness_retries``
  times; only its final answer is committed.
- For unpaced hosts that answer, decisions depend on the order of calls, not the clock.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from bspcrawl.backlog import parse, parse_all, record
from bspcrawl.counters import Stats
from bspcrawl.messages import FetchJob, FetchResult, Link
from bspcrawl.robots.politeness import RETRY_STATUSES, Politeness, unreachable
from bspcrawl.robots.robotstxt import RobotsRules
from bspcrawl.settings import Settings
from bspcrawl.urls import host_key

RULES_SHARED = 4096  # parsed robots.txt shared by hosts (most have the same empty one)
ALLOW_ALL = b""  # an empty robots.txt allows everything (RFC 9309 2.2.2)
DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"


def robots_url(url: str) -> str:
    """The robots.txt URL of ``url``'s origin."""
    scheme, _, rest_ = url.partition("://")
    return f"{scheme}://{rest_.split('/', 1)[0]}/robots.txt"


@dataclass(slots=True)
class Host:
    """One host's scheduling state and its part of Q: its URLs' records in ``q[head:]``, so
    that a URL in Q costs its record, not Python objects."""

    rules: RobotsRules | None = None
    robots_txt: bytes = b""  # the group of the robots.txt for us, for checkpoints
    rules_until: float = 0.0  # monotonic time the rules expire
    robots_failures: int = 0
    delay: float = 0.0  # max(min host delay, Crawl-delay)
    ready_at: float = 0.0  # monotonic time before which it gets no job (rest, backoff)
    outstanding: int = 0  # jobs scheduled and not yet committed
    robots_in_flight: bool = False
    queued: bool = False  # on the round-robin or the resting heap
    waiting: int = 0  # URLs in its Q
    q: bytearray | None = None
    head: int = 0

    def push(self, data: bytes, front: bool = False) -> None:
        """Add a record at the end of its Q, or at the front."""
        if self.q is None:
            self.q, self.head = bytearray(data), 0
        elif front:
            self.q[self.head:self.head] = data
        else:
            self.q += data
        self.waiting += 1

    def pop(self) -> tuple[int, Link]:
        """Take the first URL of its Q."""
        assert self.q is not None
        fp, link, self.head = parse(self.q, self.head)
        self.waiting -= 1
        if not self.waiting:
            self.q, self.head = None, 0
        elif self.head > 4096 and 2 * self.head > len(self.q):
            del self.q[:self.head]
            self.head = 0
        return fp, link

    def records(self) -> bytes:
        """Its Q's records, in order."""
        return b"" if self.q is None else bytes(self.q[self.head:])


@dataclass
class HostsState:
    """The host table in a checkpoint: a row per host (in an incremental one, per host
    changed since its base), times as seconds left at ``wall``; the Qs; the retry counts."""

    key: np.ndarray  # str
    robots_txt: np.ndarray  # bytes (b"" where the rules are unknown)
    known: np.ndarray  # bool: the rules are known
    rules_left: np.ndarray  # float64
    failures: np.ndarray  # int32
    ready_left: np.ndarray  # float64
    q_key: np.ndarray  # str
    q_records: np.ndarray  # uint8: the Qs one after another
    q_bytes: np.ndarray  # int64
    q_waiting: np.ndarray  # int64
    retry_fp: np.ndarray  # int64
    retry_n: np.ndarray  # int64
    wall: float  # time.time() of the checkpoint

    def over(self, base: HostsState) -> HostsState:
        """This incremental state completed by its base's rows of the hosts unchanged since."""
        age, n, old = self.wall - base.wall, len(base.key), base.key.tolist()
        delta = {k: i for i, k in enumerate(self.key.tolist())}
        order = [n + delta[k] if k in delta else i for i, k in enumerate(old)]
        was = set(old)
        order += [n + i for k, i in delta.items() if k not in was]

        def column(name: str) -> np.ndarray:
            was = getattr(base, name)
            return np.concatenate([was - age if name.endswith("_left") else was,
                                   getattr(self, name)])[np.array(order, np.int64)]

        return HostsState(*map(column, ("key", "robots_txt", "known", "rules_left",
                                        "failures", "ready_left")),
                          self.q_key, self.q_records, self.q_bytes, self.q_waiting,
                          self.retry_fp, self.retry_n, self.wall)


class HostTable:
    """The hosts a rank owns, served round-robin (``active``) or resting (a heap);
    :meth:`serve_active`, :meth:`add` and :meth:`share` fill a schedule, :meth:`done`
    accounts for a result; ``taken`` hears each URL that leaves Q.

    Invariants (:meth:`_check`): ``pending`` is the hosts' ``waiting`` summed; a host is
    queued at most once, exactly when ``queued``; with wall-clock politeness a host has at
    most one job out.
    """

    def __init__(self, settings: Settings, stats: Stats, taken: Callable[[int], None]) -> None:
        self.settings, self.stats, self.taken = settings, stats, taken
        self.politeness = Politeness.from_settings(settings)
        self.hosts: dict[str, Host] = {}
        self.rules: dict[bytes, tuple[RobotsRules, float]] = {}  # robots.txt -> rules, delay
        self.retries: dict[int, int] = {}  # fingerprint -> 429/503 answers so far
        self.active: deque[str] = deque()
        self.resting: list[tuple[float, str]] = []  # (ready_at, host)
        self.pending = 0
        self.touched: set[str] = set()  # hosts changed since the last full state

    def next_ready(self) -> float:
        """When the first resting host may get a job (``inf``: never)."""
        return self.resting[0][0] if self.resting else math.inf

    def links(self) -> Iterator[tuple[int, Link]]:
        """Every URL in Q, as (fingerprint, link)."""
        for host in self.hosts.values():
            yield from parse_all(host.records())

    def serve_active(self, seq: int, jobs: list[FetchJob], now: float) -> dict[str, None]:
        """One job per host on the round-robin that can take one; the hosts served."""
        while self.resting and self.resting[0][0] <= now:
            self.active.append(heapq.heappop(self.resting)[1])
        served: dict[str, None] = {}  # (a set's order is random)
        for _ in range(len(self.active)):
            if len(jobs) >= self.settings.queue_batch:
                break
            key = self.active.popleft()
            host = self.hosts[key]
            host.queued = False
            if self._can_serve(host, now):
                self._serve(key, seq, jobs, now)
                served[key] = None
            else:
                self._enqueue(key, now)
        return served

    def add(self, fp: int, link: Link, seq: int, jobs: list[FetchJob],
            served: dict[str, None], now: float) -> None:
        """Put a URL into its host's Q; serve the host if it can and was not served yet."""
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

    def share(self, served: dict[str, None], seq: int, jobs: list[FetchJob], now: float
              ) -> None:
        """Give unpaced hosts with long queues more jobs, so the biggest sites are not left
        for the crawl's tail: ``round(queued / mean)`` each, at most ``n // r`` for ``n``
        hosts served and ``r`` workers (that many run in about the schedule's time); with
        fewer hosts than workers each fills its share, ``R // n``. Counts only, no clock."""
        n, r, batch = len(served), self.settings.fetch_workers, self.settings.queue_batch
        if not n:
            return
        queued = [self.hosts[key].waiting for key in served]
        if n < r:
            quota = [batch // n] * n
        else:
            mean = sum(queued) / n
            if n // r < 2 or not mean:
                return
            quota = [min(n // r, round(q / mean)) for q in queued]
        for key, k in zip(served, quota, strict=True):
            host = self.hosts[key]
            for _ in range(k - 1):
                if len(jobs) >= batch or self._paced(host) or not self._can_serve(host, now):
                    break
                self._serve(key, seq, jobs, now)

    def _paced(self, host: Host) -> bool:
        return self.politeness.paced or host.delay > 0

    def _can_serve(self, host: Host, now: float) -> bool:
        """May the host get a job now (whether or not it got one in this schedule)?"""
        if not host.waiting or host.robots_in_flight or host.ready_at > now:
            return False
        return host.outstanding == 0 or not self._paced(host) and host.rules is not None

    def _serve(self, key: str, seq: int, jobs: list[FetchJob], now: float) -> None:
        """Give the host its robots.txt job if unknown or expired, else its first allowed URL."""
        host = self.hosts[key]
        if host.rules is None or (host.rules_until and now >= host.rules_until):
            host.rules, host.robots_in_flight = None, True
            self.touched.add(key)
            host.outstanding += 1
            url = parse(host.q, host.head)[1].url  # type: ignore[arg-type]
            jobs.append(FetchJob(seq, len(jobs), robots_url(url), key, host.delay, True,
                                 attempt=host.robots_failures))
            return
        while host.waiting:
            fp, link = host.pop()
            self.pending -= 1
            self.taken(fp)
            if host.rules.allowed(link.url):
                host.outstanding += 1
                jobs.append(FetchJob(seq, len(jobs), link.url, key, host.delay, False,
                                     link.depth, link.hops, fp=fp,
                                     attempt=self.retries.get(fp, 0)))
                break
            self.stats["frontier/robots_denied"] += 1
        self._enqueue(key, now)

    def _enqueue(self, key: str, now: float) -> None:
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

    def done(self, result: FetchResult, now: float) -> bool:
        """Account for a finished job and rest its host (robots/politeness.py); False when
        it is not to be committed (a robots.txt job, or a 429/503 with retries left)."""
        job = result.job
        host = self.hosts[job.host]
        host.outstanding -= 1
        self.touched.add(job.host)
        commit = not job.robotstxt
        pause = self.politeness.rest(result)
        if pause:
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
        """RFC 9309 2.3.1: 2xx parse, 4xx allow all, 5xx or no answer retry, then disallow all."""
        s = self.settings
        self.stats["robotstxt/fetched"] += 1
        if not unreachable(result):
            # a refused address allows all too: its URLs are committed as blocked_address
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
        shared = self.rules.get(robots_txt)
        if shared is None:
            if len(self.rules) >= RULES_SHARED:
                self.rules.clear()
            rules = RobotsRules.parse(robots_txt, self.settings.agent_token)
            shared = self.rules[robots_txt] = rules, self.politeness.delay(rules.crawl_delay)
        host.rules, host.delay = shared
        host.robots_txt, host.rules_until = host.rules.source, until

    def _check(self) -> None:
        assert sum(h.waiting for h in self.hosts.values()) == self.pending
        rounds = list(self.active) + [key for _, key in self.resting]
        assert len(rounds) == len(set(rounds)), "a host queued twice"
        assert set(rounds) == {k for k, h in self.hosts.items() if h.queued}
        for host in self.hosts.values():
            assert host.outstanding >= host.robots_in_flight
            assert not self.politeness.paced or host.outstanding <= 1

    def state(self, full: bool, now: float, wall: float) -> HostsState:
        """The table for a checkpoint: every host if ``full``, else those changed since."""
        rows = list(self.hosts.items() if full else (
            (k, self.hosts[k]) for k in sorted(self.touched) if k in self.hosts))
        if full:
            self.touched = set()
        queued = [(k, h) for k, h in self.hosts.items() if h.waiting]
        return HostsState(
            key=np.array([k for k, _ in rows], dtype=object),
            robots_txt=np.array([h.robots_txt if h.rules is not None else b"" for _, h in rows],
                                dtype=object),
            known=np.array([h.rules is not None for _, h in rows], dtype=bool),
            rules_left=np.array([h.rules_until - now for _, h in rows], np.float64),
            failures=np.array([h.robots_failures for _, h in rows], np.int32),
            ready_left=np.array([max(0.0, h.ready_at - now) for _, h in rows], np.float64),
            q_key=np.array([k for k, _ in queued], dtype=object),
            q_records=np.frombuffer(b"".join(h.records() for _, h in queued), np.uint8),
            q_bytes=np.array([len(h.q) - h.head for _, h in queued], np.int64),
            q_waiting=np.array([h.waiting for _, h in queued], np.int64),
            retry_fp=np.fromiter(self.retries, np.int64, len(self.retries)),
            retry_n=np.fromiter(self.retries.values(), np.int64, len(self.retries)),
            wall=wall)

    def restore(self, state: HostsState, mine: Callable[[str], bool], now: float) -> None:
        """Add the hosts of a full state that are ``mine``, with their Qs, and its retries."""
        delay = self.politeness.delay(None)
        self.retries.update(zip(state.retry_fp.tolist(), state.retry_n.tolist(), strict=True))
        for key, robots_txt, known, left, failures, ready in zip(
                state.key.tolist(), state.robots_txt.tolist(), state.known.tolist(),
                state.rules_left.tolist(), state.failures.tolist(),
                state.ready_left.tolist(), strict=True):
            if mine(key):
                host = self.hosts[key] = Host(robots_failures=failures, ready_at=now + ready,
                                              delay=delay)
                if known:
                    self._set_rules(host, robots_txt, now + left)
        queues, at = memoryview(state.q_records.tobytes()), 0
        for key, size, n in zip(state.q_key.tolist(), state.q_bytes.tolist(),
                                state.q_waiting.tolist(), strict=True):
            if mine(key):
                host = self.hosts[key]
                host.q, host.waiting = bytearray(queues[at:at + size]), n
                self.pending += n
                self._enqueue(key, now)
            at += size

"""One rank's frontier: seen set, CBT priority queue, per-host state and pending queue Q.

Marin et al. (2008), section 2: each superstep the scheduler extracts the top R URLs from
its priority queue; URLs that cannot be scheduled now wait in a pending queue Q. Here Q is
one FIFO per host, and a schedule takes at most one URL per host:

- the first URL of a new host queues a robots.txt job; the host's URLs wait in Q until
  that job is committed;
- hosts with URLs in Q are served round-robin, one URL each, before the CBT's top R;
- a schedule holds at most R jobs.

The fetcher runs each host's jobs one at a time, in order, with the host's delay between
them (robots/fetcher.py). Every decision here depends only on the order of operations,
never on the clock, so crawls with the same seeds, settings and P schedule the same URLs
in the same order. Priorities: shallower first (``-depth``), ties broken by the CBT (id).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from bspcrawl.cbt import CBT
from bspcrawl.partition import Link
from bspcrawl.robots.fetcher import FetchJob, FetchResult
from bspcrawl.robots.robotstxt import RobotsRules
from bspcrawl.settings import Settings
from bspcrawl.urls import fingerprints, host_key


@dataclass(slots=True)
class Host:
    """Per-host scheduling state (all hosts a rank owns)."""

    rules: RobotsRules | None = None
    delay: float = 0.0
    pending: deque[int] = field(default_factory=deque)
    queued: bool = False  # in Frontier.active


def robots_url(url: str) -> str:
    """The robots.txt URL of ``url``'s origin."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}/robots.txt"


class Frontier:
    """URLs a rank owns and has not scheduled yet, and the hosts they belong to.

    API: :meth:`receive` links, :meth:`next_jobs` for a schedule, :meth:`done` for each
    committed result; ``len()`` counts URLs waiting (CBT plus Q).
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.cbt = CBT(bucket_size=settings.queue_bucket)
        self.seen: set[int] = set()
        self.links: dict[int, Link] = {}  # fingerprint -> link, for URLs not yet scheduled
        self.hosts: dict[str, Host] = {}
        self.active: deque[str] = deque()  # hosts with known rules and URLs in Q, round-robin
        self.pending = 0
        self.counters: dict[str, int] = dict.fromkeys(
            ("frontier/duplicates", "frontier/robots_denied", "frontier/too_deep",
             "frontier/too_many_hops", "robots/fetched", "robots/errors"), 0)

    def __len__(self) -> int:
        return len(self.cbt) + self.pending

    def receive(self, links: list[Link]) -> int:
        """Insert the unseen links into the CBT; returns how many were new.

        Links must be canonical (every URL that travels comes from ``urls.resolve`` or
        ``urls.parse``), so they are fingerprinted as they are.
        """
        s = self.settings
        ids, prios = [], []
        fps = fingerprints([x.url for x in links], assume_canonical=True).tolist()
        for link, fp in zip(links, fps, strict=True):
            if s.crawl_max_depth and link.depth > s.crawl_max_depth:
                self.counters["frontier/too_deep"] += 1
            elif link.hops > s.fetch_max_redirects:
                self.counters["frontier/too_many_hops"] += 1
            elif fp in self.seen:
                self.counters["frontier/duplicates"] += 1
            else:
                self.seen.add(fp)
                self.links[fp] = link
                ids.append(fp)
                prios.append(-float(link.depth))
        if ids:
            self.cbt.insert_many(np.array(ids, dtype=np.int64), np.array(prios))
        return len(ids)

    def next_jobs(self, seq: int) -> list[FetchJob]:
        """The jobs of schedule ``seq``: one URL per host from Q, then from the CBT's top."""
        limit = self.settings.queue_batch
        jobs: list[FetchJob] = []
        served: set[str] = set()
        for _ in range(len(self.active)):
            if len(jobs) >= limit:
                break
            key = self.active.popleft()
            self.hosts[key].queued = False
            self._serve(key, seq, jobs)
            served.add(key)
        room = limit - len(jobs)
        if room > 0 and len(self.cbt) and self.pending < self.settings.queue_pending_max:
            ids, _ = self.cbt.extract_many(room)
            for fp in ids.tolist():
                url = self.links[fp].url
                key = host_key(url)
                host = self.hosts.get(key)
                if host is None:
                    host = self.hosts[key] = Host(delay=self.settings.politeness_min_host_delay)
                    jobs.append(FetchJob(seq, len(jobs), robots_url(url), key, host.delay, True))
                host.pending.append(fp)
                self.pending += 1
                if host.rules is not None and key not in served:
                    self._serve(key, seq, jobs)
                    served.add(key)
                else:
                    self._enqueue(key)
        return jobs

    def _serve(self, key: str, seq: int, jobs: list[FetchJob]) -> None:
        """Schedule the host's first allowed URL in Q (dropping disallowed ones)."""
        host = self.hosts[key]
        assert host.rules is not None
        while host.pending:
            fp = host.pending.popleft()
            self.pending -= 1
            link = self.links.pop(fp)
            if host.rules.allowed(link.url):
                jobs.append(FetchJob(seq, len(jobs), link.url, key, host.delay, False,
                                     link.depth, link.hops))
                break
            self.counters["frontier/robots_denied"] += 1
        self._enqueue(key)

    def _enqueue(self, key: str) -> None:
        """Put a host with known rules and URLs in Q on the round-robin, once."""
        host = self.hosts[key]
        if host.pending and host.rules is not None and not host.queued:
            host.queued = True
            self.active.append(key)

    def done(self, result: FetchResult) -> None:
        """A committed robots.txt result sets its host's rules and delay."""
        if not result.job.robots:
            return
        host = self.hosts[result.job.host]
        host.rules = self._rules(result)
        crawl_delay = min(host.rules.crawl_delay or 0.0, self.settings.politeness_max_crawl_delay)
        host.delay = max(self.settings.politeness_min_host_delay, crawl_delay)
        self._enqueue(result.job.host)

    def _rules(self, result: FetchResult) -> RobotsRules:
        """RFC 9309 2.3.1: 2xx parse, 4xx allow all, 5xx or no answer disallow all."""
        self.counters["robots/fetched"] += 1
        if 200 <= result.status < 300:
            return RobotsRules.parse(result.body, self.settings.agent_token)
        if 400 <= result.status < 500:
            return RobotsRules.allow_all()
        self.counters["robots/errors"] += 1
        return RobotsRules.disallow_all()

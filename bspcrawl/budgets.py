"""Per-host and per-registered-domain budgets of URLs, counted as URLs arrive.

A spider trap that is shallow and endless (a calendar, a faceted search) makes new URLs
of the same host forever; a domain can add hosts as well (``a1.example``,
``a2.example``...). So a rank takes at most ``crawl_max_host_pages`` URLs of one host and
``crawl_max_domain_pages`` of one registered domain (``urls.registered_domain``), counted
when a new URL arrives, before it costs memory, whatever its answer turns out to be
(revisits and retries are not arrivals). Heritrix's queue budgets and IRLbot's per-domain
budgets are the models.

A host lives on one rank, so its count is exact. A domain's hosts are spread over the
ranks, so each rank counts the URLs it takes per domain and tells the others at a sync
(:meth:`Budgets.news`, then :meth:`Budgets.add_news` with the other ranks'), once it took
``domain_cap / (2 P)`` of them since it last told: so most domains never cost a message,
and a superstep without news has no collective for them. A rank then sees its own count and
what the others told, so a domain can go over its budget by half of it and what the ranks
took in one superstep: a bound on a hostile domain's cost, not a quota to the page. Every
rank takes the same decisions for the same P.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bspcrawl.urls import domain_hash, host_key


@dataclass
class BudgetsState:
    """The budgets in a checkpoint: URLs taken per host key, and per domain hash as this
    rank sees them with the part it has not told yet."""

    host: np.ndarray  # str
    host_n: np.ndarray  # int64
    domain: np.ndarray  # int64
    domain_n: np.ndarray  # int64
    domain_new: np.ndarray  # int64


class Budgets:
    """URLs taken per host (this rank's hosts) and per registered domain (all ranks)."""

    def __init__(self, host_cap: int, domain_cap: int, ranks: int = 1) -> None:
        self.host_cap, self.domain_cap, self.ranks = host_cap, domain_cap, ranks
        self.due = max(1, domain_cap // (2 * ranks))  # untold URLs of a domain to tell
        self.hosts: dict[str, int] = {}  # host key -> URLs taken
        self.domain_of: dict[str, int] = {}  # host key -> its registered domain's hash
        self.domains: dict[int, int] = {}  # domain hash -> URLs taken (see module doc)
        self.new: dict[int, int] = {}  # domain hash -> URLs this rank took, untold
        self.ready: list[int] = []  # domains of ``due`` untold URLs, to tell at the sync

    def take(self, url: str) -> str:
        """Count ``url`` in its host's and domain's budgets; or if either is spent, return
        the name of the counter that says so (and count nothing)."""
        if not (self.host_cap or self.domain_cap):
            return ""
        key = host_key(url)
        n = self.hosts.get(key, 0)
        if self.host_cap and n >= self.host_cap:
            return "frontier/host_cap"
        if self.domain_cap:
            d = self.domain_of.get(key)
            if d is None:
                d = self.domain_of[key] = domain_hash(key)
            m = self.domains.get(d, 0)
            if m >= self.domain_cap:
                return "frontier/domain_cap"
            self.domains[d] = m + 1
            if self.ranks > 1:  # one rank tells nobody
                untold = self.new[d] = self.new.get(d, 0) + 1
                if untold == self.due:
                    self.ready.append(d)
        self.hosts[key] = n + 1
        return ""

    def news(self) -> np.ndarray:
        """The domains this rank took ``domain_cap / (2 ranks)`` URLs of since it last
        told, as int64 pairs (domain hash, URLs) flattened, for the other ranks; those
        counts are then told (they are counted here already). Costs nothing for the
        domains not due: they are listed as they become due."""
        told = [(d, self.new.pop(d)) for d in self.ready]
        self.ready.clear()
        return np.array(told, np.int64).reshape(-1)

    def add_news(self, pairs: np.ndarray) -> None:
        """Add the other ranks' :meth:`news` (pairs flattened, as sent)."""
        domains = self.domains
        for d, n in pairs.reshape(-1, 2).tolist():
            domains[d] = domains.get(d, 0) + n

    def state(self) -> BudgetsState:
        """The counts as a checkpoint holds them: hosts', and domains' as this rank sees
        them (its own untold counts as such, so that they are told after a resume)."""
        return BudgetsState(
            np.array(list(self.hosts), dtype=object),
            np.fromiter(self.hosts.values(), np.int64, len(self.hosts)),
            np.fromiter(self.domains, np.int64, len(self.domains)),
            np.fromiter(self.domains.values(), np.int64, len(self.domains)),
            np.array([self.new.get(d, 0) for d in self.domains], np.int64))

    def restore(self, states: list[BudgetsState], owns: Callable[[str], bool]) -> None:
        """Take the host counts of the hosts this rank ``owns`` from checkpoint
        ``states``: this rank's own, or with another P every old rank's. Domain counts:
        what was told, the same in every state, plus the untold counts of the states
        given; those stay untold with the same P, and with another P they count as told
        (every new rank has them all)."""
        told: dict[int, int] = {}
        untold: dict[int, int] = {}
        for st in states:
            for key, n in zip(st.host.tolist(), st.host_n.tolist(), strict=True):
                if owns(key):
                    self.hosts[key] = n
            for d, n, new in zip(st.domain.tolist(), st.domain_n.tolist(),
                                 st.domain_new.tolist(), strict=True):
                told[d] = n - new
                untold[d] = untold.get(d, 0) + new
        for d, n in told.items():
            self.domains[d] = n + untold[d]
        if len(states) == 1 and self.ranks > 1:
            self.new = {d: n for d, n in untold.items() if n}
            self.ready = [d for d, n in self.new.items() if n >= self.due]

"""Whether a URL's host and registered domain may add more URLs, counted on arrival, so an
endless shallow trap or endless subdomains are bounded (after Heritrix's queue budgets and
IRLbot's per-domain budgets).

A host lives on one rank, so its count is exact. A domain's hosts are spread over the
ranks: each rank tells the others its count at a sync once it took ``domain_cap / (2 P)``
URLs since it last told (:meth:`Budgets.news`), so most domains never cost a message. A
domain can go over its budget by half of it plus one superstep's URLs: a bound on a
hostile domain's cost, not a quota to the page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bspcrawl.urls import domain_hash, host_key


@dataclass
class BudgetsState:
    """The budgets in a checkpoint: URLs per host, and per domain with the part untold."""

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
        self.domain_of: dict[str, int] = {}  # host key -> domain hash
        self.domains: dict[int, int] = {}  # domain hash -> URLs taken, told or own
        self.new: dict[int, int] = {}  # domain hash -> URLs this rank took, untold
        self.ready: list[int] = []  # domains due to be told

    def take(self, url: str) -> str:
        """Count ``url`` in its budgets, or if one is spent, the counter that says so."""
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
        """The (domain hash, URLs) pairs, flattened, of the domains due to be told."""
        told = [(d, self.new.pop(d)) for d in self.ready]
        self.ready.clear()
        return np.array(told, np.int64).reshape(-1)

    def add_news(self, pairs: np.ndarray) -> None:
        """Add the other ranks' :meth:`news`."""
        domains = self.domains
        for d, n in pairs.reshape(-1, 2).tolist():
            domains[d] = domains.get(d, 0) + n

    def state(self) -> BudgetsState:
        """The counts for a checkpoint, the untold ones apart so they are told on resume."""
        return BudgetsState(
            np.array(list(self.hosts), dtype=object),
            np.fromiter(self.hosts.values(), np.int64, len(self.hosts)),
            np.fromiter(self.domains, np.int64, len(self.domains)),
            np.fromiter(self.domains.values(), np.int64, len(self.domains)),
            np.array([self.new.get(d, 0) for d in self.domains], np.int64))

    def restore(self, states: list[BudgetsState], owns: Callable[[str], bool]) -> None:
        """Take the counts of the hosts this rank ``owns``, and each domain's told count
        plus every state's untold; those stay untold only on the same P."""
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

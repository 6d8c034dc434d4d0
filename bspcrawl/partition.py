"""Host -> owner rank (a directory every rank holds alike), and the byte encoding of URL
batches between ranks.

Partitioning by host keeps everything per host (politeness, robots.txt, the host's
pending queue) on one rank, as in Marin et al. (2008), section 2. Which rank a host goes to
is not ``hash % P`` but a :class:`Directory`: hosts are dealt to the ranks round-robin, in
an order every rank agrees on (the seeds' hosts first, then each superstep's new hosts
sorted by host hash), so every rank owns the same number of hosts, give or take one. With
hash % P the number of hosts per rank varies too, and on a web of few hosts of unequal
sizes that variance decides the balance.

Only the first ``deal`` hosts are dealt (``DEAL`` = 2^16 by default): past them the
directory is *full*, and a new host's owner is its host hash mod P, known to every rank
without a word. So the directory every rank holds stays bounded (a dict entry and 8 bytes
per host dealt, and a dict entry per registered domain of those), whatever the number of
hosts, while a small web keeps the balance of dealing; on a large one, hashing many hosts
evens the number per rank out by itself (its spread is ~sqrt(H/P)). The registered-domain
cap on hosts (``crawl_max_domain_hosts``) counts the dealt hosts; past the limit a domain's
hosts are bounded by its page budget (``budgets.py``) only.

A link to a host no rank has seen yet (the directory not full) is *held* by the rank
that found it for one superstep: its host hash and its registered domain's are announced
at that superstep's sync (an ``Iallgatherv``, ``bsp.announce``, only when some rank has
new hosts), every rank deals the announced hosts the same way (refusing those past their
domain's cap, ``crawl_max_domain_hosts``), and the link is sent the superstep after.

A batch is the UTF-8 text of one record per line, ``depth hops url`` or ``depth hops url
anchor``; a WHATWG-serialised URL holds no space or newline, and anchor text (at most
``messages.ANCHOR_BYTES`` = 100 bytes, whitespace collapsed: ``messages.clip_anchor``) no
newline, so the format needs no escaping. Batches travel as numpy uint8 buffers
(``Alltoallv`` counts first), never as pickled lists; checkpoints hold links so too.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable

import numpy as np

from bspcrawl.messages import Link
from bspcrawl.urls import domain_hash, host_hash, host_key

DEAL = 1 << 16
"""Hosts a :class:`Directory` deals before it hashes the next ones."""


class Directory:
    """Host hash -> owner rank, identical on every rank that made the same calls.

    API: :meth:`assign` hosts (in any order: they are sorted), :meth:`owner` of a URL
    (None if its host is not assigned yet), :meth:`bucket` links into outboxes,
    :meth:`state` / :meth:`from_state` (also onto another number of ranks).

    With ``max_domain_hosts``, a registered domain gets at most that many hosts: the
    next ones are *refused* (owner :data:`REFUSED`), and links to them are dropped by
    :meth:`bucket`, so a domain that names endless subdomains (``a1.example``,
    ``a2.example``...) cannot grow the directory every rank holds. Every rank refuses
    the same hosts, since all deal the same hosts in the same order.
    """

    def __init__(self, size: int, max_domain_hosts: int = 0, deal: int = DEAL) -> None:
        self.size = size
        self.max_domain_hosts = max_domain_hosts
        self.deal = deal  # hosts dealt at most; the next ones are hashed
        self.owners: dict[int, int] = {}  # host hash -> rank or REFUSED, in the order assigned
        self.host_domains = array("q")  # the domain hash of each host, in owners' order
        self.domains: dict[int, int] = {}  # domain hash -> hosts dealt
        self.dealt = 0

    def assign(self, hosts: Iterable[tuple[int, int]]) -> None:
        """Deal the hosts (``(host hash, domain hash)`` pairs) not assigned yet to the
        ranks, round-robin, sorted by host hash; refuse those past their domain's cap."""
        owners, cap = self.owners, self.max_domain_hosts
        for h, d in sorted(dict(hosts).items()):
            if h in owners:
                continue
            if self.full:
                break
            self.host_domains.append(d)
            n = self.domains.get(d, 0)
            if cap and n >= cap:
                owners[h] = REFUSED
                continue
            self.domains[d] = n + 1
            owners[h] = self.dealt % self.size
            self.dealt += 1

    def owner(self, url: str) -> int | None:
        """The rank that owns ``url``'s host (:data:`REFUSED` if none may), or None if it
        is not assigned yet."""
        return self.rank_of(host_key(url))

    @property
    def full(self) -> bool:
        """Are new hosts hashed (``deal`` hosts assigned)?"""
        return len(self.owners) >= self.deal

    def rank_of(self, key: str) -> int | None:
        """The rank that owns the host ``key`` ("host:port"), :data:`REFUSED`, or None."""
        return self.owner_of(host_hash(key))

    def owner_of(self, h: int) -> int | None:
        """The rank that owns the host of hash ``h``, :data:`REFUSED`, or None."""
        rank = self.owners.get(h)
        return h % self.size if rank is None and self.full else rank

    def owns(self, rank: int) -> Callable[[int], bool]:
        """A test of host hashes: does ``rank`` own that host?"""
        return lambda h: self.owner_of(h) == rank

    def bucket(self, links: list[Link]) -> tuple[list[list[Link]], list[Link], int]:
        """Split links into one outbox per rank, keeping their order; the links held back
        because their host is not assigned yet; and how many were dropped because their
        host is refused."""
        boxes: list[list[Link]] = [[] for _ in range(self.size)]
        held: list[Link] = []
        refused = 0
        owner = self.owner_of
        for link in links:
            rank = owner(host_hash(host_key(link.url)))
            if rank is None:
                held.append(link)
            elif rank == REFUSED:
                refused += 1
            else:
                boxes[rank].append(link)
        return boxes, held, refused

    def state(self) -> np.ndarray:
        """The directory as a checkpoint holds it: the (host hash, domain hash) pairs
        assigned, in their order, as an (n, 2) int64 array."""
        hosts = np.fromiter(self.owners, np.int64, len(self.owners))
        return np.column_stack([hosts, np.array(self.host_domains, np.int64)])

    @classmethod
    def from_state(cls, state: np.ndarray, size: int, max_domain_hosts: int = 0,
                   deal: int = DEAL) -> Directory:
        """The directory of a state's hosts dealt again to ``size`` ranks, in the same
        order (the same owners when ``size`` and the cap are unchanged); the hashed ones
        are hashed again."""
        directory = cls(size, max_domain_hosts, deal)
        for pair in state.tolist():
            directory.assign([tuple(pair)])
        return directory


REFUSED = -1
"""The owner of a host refused by its domain's cap (:class:`Directory`)."""


def host_pair(key: str) -> tuple[int, int]:
    """``(host hash, registered domain hash)`` of host key ``key``, as
    :meth:`Directory.assign` takes them."""
    return host_hash(key), domain_hash(key)


def notice(hosts: list[tuple[int, int]], news: np.ndarray) -> np.ndarray:
    """A rank's part of the superstep's announcement (``bsp.announce``), int64: the
    number of host values, its new hosts' (host hash, domain hash) pairs, then its domain
    budget news (``budgets.Budgets.news``). Empty when it has neither, so that a
    superstep in which no rank has any needs no collective."""
    if not hosts and not len(news):
        return np.zeros(0, np.int64)
    return np.concatenate(([2 * len(hosts)], np.array(hosts, np.int64).reshape(-1),
                           news)).astype(np.int64)


def read_notices(values: np.ndarray, found: np.ndarray, rank: int
                 ) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Split every rank's :func:`notice` (``found`` values each, in rank order): all the
    host pairs, and the news of the ranks other than ``rank``."""
    hosts: list[tuple[int, int]] = []
    news = [np.zeros(0, np.int64)]
    start = 0
    for r, n in enumerate(found.tolist()):
        part, start = values[start:start + n], start + n
        if n:
            k = int(part[0])
            hosts += map(tuple, part[1:1 + k].reshape(-1, 2).tolist())
            if r != rank:
                news.append(part[1 + k:])
    return hosts, np.concatenate(news)


def encode(links: list[Link]) -> bytes:
    """One batch as bytes (see the module docstring); checkpoints hold links so too."""
    return "".join(f"{x.depth} {x.hops} {x.url} {x.anchor}\n" if x.anchor
                   else f"{x.depth} {x.hops} {x.url}\n" for x in links).encode()


def decode(data: bytes | np.ndarray) -> list[Link]:
    """Inverse of :func:`encode`; a malformed line raises ValueError."""
    text = bytes(data).decode()
    out = []
    for line in text.split("\n")[:-1]:
        depth, hops, url, *anchor = line.split(" ", 3)
        out.append(Link(url, int(depth), int(hops), anchor[0] if anchor else ""))
    return out


def pack(outboxes: list[list[Link]]) -> tuple[np.ndarray, np.ndarray]:
    """Encode one outbox per rank into (uint8 buffer, int64 byte counts per rank)."""
    parts = [encode(box) for box in outboxes]
    counts = np.array([len(p) for p in parts], dtype=np.int64)
    buf = np.frombuffer(b"".join(parts), dtype=np.uint8)
    return buf, counts


def unpack(buf: np.ndarray, counts: np.ndarray) -> list[Link]:
    """Decode the concatenated batches received from every rank, in rank order."""
    return decode(buf[: int(counts.sum())])

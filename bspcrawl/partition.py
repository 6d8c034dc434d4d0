"""Host -> owner rank, and the byte encoding of URL batches between ranks.

Partitioning by host keeps a host's politeness and queue on one rank (Marin et al. (2008),
section 2). Hosts are dealt round-robin in an order every rank agrees on, so ranks own equal
numbers of them (under ``hash % P`` that number varies); past ``DEAL`` hosts, when hashing
balances by itself, a new host's owner is its hash mod P, so the directory stays bounded.
A link to a host not dealt yet is *held* one superstep while its host is announced.

A batch is one line per link, ``depth hops url [anchor]``: a serialised URL has no space
or newline and a clipped anchor (``messages.clip_anchor``) no newline, so nothing needs
escaping. Batches travel as uint8 buffers, never pickled; checkpoints hold links so too.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable

import numpy as np

from bspcrawl.messages import Link
from bspcrawl.urls import domain_hash, host_hash, host_key

DEAL = 1 << 16  # hosts a Directory deals before it hashes the next ones


class Directory:
    """Host hash -> owner rank, the same on every rank that made the same calls. Past
    ``max_domain_hosts`` hosts of a registered domain the next are *refused* (their links
    dropped), so endless subdomains cannot grow it."""

    def __init__(self, size: int, max_domain_hosts: int = 0, deal: int = DEAL) -> None:
        self.size = size
        self.max_domain_hosts = max_domain_hosts
        self.deal = deal
        self.owners: dict[int, int] = {}  # host hash -> rank or REFUSED, in the order assigned
        self.host_domains = array("q")  # each host's domain hash, in owners' order
        self.domains: dict[int, int] = {}  # domain hash -> hosts dealt
        self.dealt = 0

    def assign(self, hosts: Iterable[tuple[int, int]]) -> None:
        """Deal the (host hash, domain hash) pairs not assigned yet, sorted by host hash."""
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
        """The rank that owns ``url``'s host, :data:`REFUSED`, or None (not assigned yet)."""
        return self.rank_of(host_key(url))

    @property
    def full(self) -> bool:
        """Are new hosts hashed?"""
        return len(self.owners) >= self.deal

    def rank_of(self, key: str) -> int | None:
        """The owner of the host ``key``, as :meth:`owner`."""
        return self.owner_of(host_hash(key))

    def owner_of(self, h: int) -> int | None:
        """The owner of the host of hash ``h``, as :meth:`owner`."""
        rank = self.owners.get(h)
        return h % self.size if rank is None and self.full else rank

    def owns(self, rank: int) -> Callable[[int], bool]:
        """Does ``rank`` own the host of a hash?"""
        return lambda h: self.owner_of(h) == rank

    def bucket(self, links: list[Link]) -> tuple[list[list[Link]], list[Link], int]:
        """One outbox per rank, in order; the links held (host not assigned yet); the
        number dropped (host refused)."""
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
        """The (host hash, domain hash) pairs assigned, in order, as an (n, 2) array."""
        hosts = np.fromiter(self.owners, np.int64, len(self.owners))
        return np.column_stack([hosts, np.array(self.host_domains, np.int64)])

    @classmethod
    def from_state(cls, state: np.ndarray, size: int, max_domain_hosts: int = 0,
                   deal: int = DEAL) -> Directory:
        """A state's hosts dealt again to ``size`` ranks in their order (the same owners
        for the same ``size`` and cap)."""
        directory = cls(size, max_domain_hosts, deal)
        for pair in state.tolist():
            directory.assign([tuple(pair)])
        return directory


REFUSED = -1  # the owner of a host refused by its domain's cap


def host_pair(key: str) -> tuple[int, int]:
    """(host hash, registered domain hash) of a host key, as :meth:`Directory.assign` takes."""
    return host_hash(key), domain_hash(key)


def notice(hosts: list[tuple[int, int]], news: np.ndarray) -> np.ndarray:
    """A rank's part of the announcement (``bsp.announce``): the number of host values, its
    new hosts' pairs, its domain budget news; empty if none, so no collective is needed."""
    if not hosts and not len(news):
        return np.zeros(0, np.int64)
    return np.concatenate(([2 * len(hosts)], np.array(hosts, np.int64).reshape(-1),
                           news)).astype(np.int64)


def read_notices(values: np.ndarray, found: np.ndarray, rank: int
                 ) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Every rank's :func:`notice` split: all host pairs, and the other ranks' news."""
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
    """One batch as bytes (see the module docstring)."""
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
    """One outbox per rank as (uint8 buffer, byte counts per rank)."""
    parts = [encode(box) for box in outboxes]
    return (np.frombuffer(b"".join(parts), dtype=np.uint8),
            np.array([len(p) for p in parts], dtype=np.int64))


def unpack(buf: np.ndarray, counts: np.ndarray) -> list[Link]:
    """The links of every rank's batch, in rank order."""
    return decode(buf[: int(counts.sum())])

"""Host -> owner rank (a directory every rank holds alike), and the byte encoding of URL
batches between ranks.

Partitioning by host keeps everything per host (politeness, robots.txt, the host's
pending queue) on one rank, as in Marin et al. (2008), section 2. Which rank a host goes to
is not ``hash % P`` but a :class:`Directory`: hosts are dealt to the ranks round-robin, in
an order every rank agrees on (the seeds' hosts first, then each superstep's new hosts
sorted by host hash), so every rank owns the same number of hosts, give or take one. With
hash % P the number of hosts per rank varies too, and on a web of few hosts of unequal
sizes that variance decided the balance: 20,000 pages on 2,000 testweb hosts gave a load
balance (mean / max pages per rank) of 0.87-0.89 at P = 8 by hash, 0.93-0.95 dealt.

A link to a host no rank has seen yet is *held* by the rank that found it for one
superstep: its host hash is announced at that superstep's sync (an ``Iallgatherv``,
``bsp.announce``, only when some rank has new hosts), every rank deals the announced
hosts the same way, and the link is sent the superstep after. The directory costs a dict
entry per host on every rank (about 100 bytes: 10^6 hosts, 100 MB per rank).

A batch is the UTF-8 text of one record per line, ``depth hops url``; a WHATWG-serialised
URL holds no space or newline, so the format needs no escaping. Batches travel as numpy
uint8 buffers (``Alltoallv`` counts first), never as pickled lists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from bspcrawl.messages import Link
from bspcrawl.urls import host_hash, host_key


class Directory:
    """Host hash -> owner rank, identical on every rank that made the same calls.

    API: :meth:`assign` hosts (in any order: they are sorted), :meth:`owner` of a URL
    (None if its host is not assigned yet), :meth:`bucket` links into outboxes,
    :meth:`snapshot` / :meth:`restore` (also onto another number of ranks).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.owners: dict[int, int] = {}  # host hash -> rank, in the order assigned

    def assign(self, hashes: Iterable[int]) -> None:
        """Deal the hosts not assigned yet to the ranks, round-robin, sorted by hash."""
        owners = self.owners
        for h in sorted(set(hashes).difference(owners)):
            owners[h] = len(owners) % self.size

    def owner(self, url: str) -> int | None:
        """The rank that owns ``url``'s host, or None if it is not assigned yet."""
        return self.rank_of(host_key(url))

    def rank_of(self, key: str) -> int | None:
        """The rank that owns the host ``key`` ("host:port"), or None."""
        return self.owners.get(host_hash(key))

    def owns(self, rank: int) -> Callable[[int], bool]:
        """A test of host hashes: does ``rank`` own that host?"""
        owners = self.owners
        return lambda h: owners.get(h) == rank

    def bucket(self, links: list[Link]) -> tuple[list[list[Link]], list[Link]]:
        """Split links into one outbox per rank, keeping their order, and the links held
        back because their host is not assigned yet."""
        boxes: list[list[Link]] = [[] for _ in range(self.size)]
        held: list[Link] = []
        owners = self.owners
        for link in links:
            rank = owners.get(host_hash(host_key(link.url)))
            (held if rank is None else boxes[rank]).append(link)
        return boxes, held

    def snapshot(self) -> np.ndarray:
        """The host hashes in the order they were assigned (int64), for a checkpoint."""
        return np.fromiter(self.owners, np.int64, len(self.owners))

    @classmethod
    def restore(cls, hashes: np.ndarray, size: int) -> Directory:
        """The directory of :meth:`snapshot`'s hosts dealt again to ``size`` ranks, in the
        same order (the same owners when ``size`` is unchanged)."""
        directory = cls(size)
        directory.owners = {h: i % size for i, h in enumerate(hashes.tolist())}
        return directory


def links_to_arrays(links: list[Link], prefix: str = "") -> dict[str, np.ndarray]:
    """Links as checkpoint columns: ``{prefix}url`` (str), ``{prefix}depth`` and
    ``{prefix}hops`` (int32)."""
    return {f"{prefix}url": np.array([x.url for x in links], dtype=object),
            f"{prefix}depth": np.array([x.depth for x in links], dtype=np.int32),
            f"{prefix}hops": np.array([x.hops for x in links], dtype=np.int32)}


def links_from_arrays(arrays: dict[str, np.ndarray], prefix: str = "") -> list[Link]:
    """Inverse of :func:`links_to_arrays`."""
    return [Link(u, d, h) for u, d, h in zip(
        arrays[f"{prefix}url"].astype(str).tolist(), arrays[f"{prefix}depth"].tolist(),
        arrays[f"{prefix}hops"].tolist(), strict=True)]


def encode(links: list[Link]) -> bytes:
    """One batch as bytes (see the module docstring)."""
    return "".join(f"{x.depth} {x.hops} {x.url}\n" for x in links).encode()


def decode(data: bytes | np.ndarray) -> list[Link]:
    """Inverse of :func:`encode`; a malformed line raises ValueError."""
    text = bytes(data).decode()
    out = []
    for line in text.splitlines():
        depth, hops, url = line.split(" ", 2)
        out.append(Link(url, int(depth), int(hops)))
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

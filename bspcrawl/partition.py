"""URL -> owner rank by host hash, and the byte encoding of URL batches between ranks.

Partitioning by host keeps everything per host (politeness, robots.txt, the host's
pending queue) on one rank, as in Marin et al. (2008), section 2.

A batch is the UTF-8 text of one record per line, ``depth hops url``; a WHATWG-serialised
URL holds no space or newline, so the format needs no escaping. Batches travel as numpy
uint8 buffers (``Alltoallv`` counts first), never as pickled lists.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bspcrawl.urls import host_hash, host_key


@dataclass(slots=True, frozen=True)
class Link:
    """A URL travelling to its owner: its depth from a seed and its redirect hops so far."""

    url: str
    depth: int = 0
    hops: int = 0


def owner(url: str, size: int) -> int:
    """The rank (0..size-1) that owns ``url``'s host."""
    return host_owner(host_key(url), size)


def host_owner(key: str, size: int) -> int:
    """The rank (0..size-1) that owns the host ``key`` ("host:port")."""
    return host_hash(key) % size if size > 1 else 0


def bucket(links: list[Link], size: int) -> list[list[Link]]:
    """Split links into one outbox per rank, keeping their order."""
    boxes: list[list[Link]] = [[] for _ in range(size)]
    for link in links:
        boxes[owner(link.url, size)].append(link)
    return boxes


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

"""Exact and near-duplicate clusters of a finished crawl's pages (``inspect --duplicates``).

Among the pages whose body is indexed, two are exact duplicates when their
``content_fp`` are equal, near-duplicates when their ``simhash`` (0: none) differ in at
most ``K`` bits; clusters are the connected components of both relations, each named by
its lowest ``crawl.h5`` row. Near pairs are found as Manku, Jain and Das Sarma, "Detecting
near-duplicates for web crawling", with blocks instead of permuted tables: two
fingerprints within 3 bits agree on one of 4 blocks of 16 bits, so only those sharing a
block value are compared (``docs/duplicates.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from bspcrawl.index.inspect import open_crawl
from bspcrawl.index.simhash import K
from bspcrawl.index.store import answered_ok

BLOCKS = 4  # K + 1, for the pigeonhole


def popcount(x: np.ndarray) -> np.ndarray:
    return np.unpackbits(x.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)


def near_pairs(values: np.ndarray, k: int = K) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs ``(i, j)``, ``i < j``, of the distinct ``values`` within ``k`` bits."""
    assert k < BLOCKS
    found_i, found_j = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    shift = 64 // BLOCKS
    for b in range(BLOCKS):
        key = (values >> np.uint64(b * shift)) & np.uint64((1 << shift) - 1)
        order = np.argsort(key, kind="stable")
        key = key[order]
        for d in range(1, len(values)):  # each value against the d-th next of its block
            same = np.flatnonzero(key[:-d] == key[d:])
            if not len(same):
                break
            i, j = order[same], order[same + d]
            close = popcount(values[i] ^ values[j]) <= k
            found_i.append(np.minimum(i, j)[close])
            found_j.append(np.maximum(i, j)[close])
    pairs = np.unique(np.stack((np.concatenate(found_i), np.concatenate(found_j))), axis=1)
    return pairs[0], pairs[1]


def clusters(content_fp: np.ndarray, simhash: np.ndarray, eligible: np.ndarray,
             k: int = K) -> np.ndarray:
    """For each row, the lowest row of its cluster (itself when it has no duplicate or is
    not ``eligible``)."""
    n = len(content_fp)
    rows = np.flatnonzero(eligible)
    edges_a, edges_b = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for values, near in ((content_fp[rows], False), (simhash[rows], True)):
        kept = rows[values != 0]
        distinct, first, inverse = np.unique(values[values != 0], return_index=True,
                                             return_inverse=True)
        edges_a.append(kept)  # every row to the first row of its value
        edges_b.append(kept[first][inverse])
        if near:
            i, j = near_pairs(distinct, k)
            edges_a.append(kept[first][i])
            edges_b.append(kept[first][j])
    a, b = np.concatenate(edges_a), np.concatenate(edges_b)
    graph = sp.coo_matrix((np.ones(len(a), np.int8), (a, b)), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    lowest = np.full(label.max() + 1 if n else 0, n, np.int64)
    np.minimum.at(lowest, label, np.arange(n))
    return lowest[label]


def cluster_of(out: Path) -> np.ndarray:
    """For each row of ``out/crawl.h5``, the lowest row of its duplicate cluster."""
    with open_crawl(out) as f:
        p = f["pages"]
        return clusters(p["content_fp"][:], p["simhash"][:],
                        answered_ok(p["status"][:], p["revisit"][:]))


@dataclass(slots=True)
class Cluster:
    """Two or more duplicate pages; ``exact`` when they all have one body."""

    exact: bool
    rows: np.ndarray
    urls: list[str]
    content_fp: np.ndarray


def listing(out: Path) -> list[Cluster]:
    """The crawl's clusters of two or more pages, in order of their lowest row."""
    label = cluster_of(out)
    many = np.flatnonzero(np.bincount(label, minlength=len(label)) > 1)
    if not len(many):
        return []
    with open_crawl(out) as f:
        urls = f["pages/url"].asstr()[:]
        content = f["pages/content_fp"][:]
    members = np.flatnonzero(np.isin(label, many))
    members = members[np.argsort(label[members], kind="stable")]
    starts = np.flatnonzero(np.diff(label[members], prepend=-1))
    found = []
    for rows in np.split(members, starts[1:]):
        fps = content[rows]
        found.append(Cluster(bool((fps == fps[0]).all()), rows, urls[rows].tolist(), fps))
    return found

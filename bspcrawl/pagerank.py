"""PageRank over a finished crawl's link graph, as BSP supersteps (``bspcrawl rank``).

Page, Brin, Motwani and Winograd (1999), iterated the way Pregel (Malewicz et al., SIGMOD
2010) does it: each rank owns a block of pages and, every superstep, sends the rank mass
its pages give to pages of other ranks. The graph (nodes: every ``/pages`` row in
``crawl.h5`` order; edges: links to fetched pages, each once, no self-links, a redirect
to its target) is documented in ``docs/output.md`` ("The graph bspcrawl rank ranks").

The ranks of ``bspcrawl rank`` need not be the crawl's: rank ``r`` of ``P`` owns the
contiguous block of global rows ``[N r / P, N (r + 1) / P)`` (:func:`blocks`), read from
whichever rank files hold them. One setup superstep resolves link fingerprints to global
rows through a directory (fingerprint ``f`` is looked up at rank ``f mod P``) and tells
every rank which of its rows each other rank will send mass to. Then every iteration is
one sparse matrix-vector product per rank (``M @ c``: ``M`` sums, for each distinct
remote or local target, the contributions ``c = x / outdegree`` of the local pages linking
to it), one ``Ialltoallv`` of those float64 sums (counts fixed at setup), a ``bincount``
to add them up at their owner, and one ``Iallreduce`` of two floats: the dangling pages'
mass of this iterate and the L1 change of the last step (so convergence is seen one
matrix-vector product late, and no second collective is needed). Both collectives are
polled with ``Test`` and short sleeps (``bsp.wait``). Sums taken in another order differ in
the last bits only: the vector is the same to 1e-9 on any number of ranks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

from bspcrawl.bsp import exchange, wait
from bspcrawl.index.output import join
from bspcrawl.index.store import rank_path, write_atomically
from bspcrawl.urls import key_fingerprints, strip_pattern

DAMPING = 0.85
TOLERANCE = 1e-10
"""Default bound on the L1 change of the last iteration (the vector sums to 1)."""
MAX_ITERATIONS = 1000


@dataclass(slots=True)
class Graph:
    """One rank's share of the graph: the global rows ``[lo, lo + len(fp))``, their
    fingerprints ``fp`` (int64), and the out-links of those rows as (``src``: local row,
    ``target``: fingerprint) pairs, duplicates and unfetched targets still in."""

    lo: int
    fp: np.ndarray
    src: np.ndarray
    target: np.ndarray


@dataclass(slots=True)
class Result:
    """What :func:`pagerank` found: this rank's block of the vector, and global figures."""

    x: np.ndarray
    iterations: int
    residual: float
    pages: int
    edges: int
    dangling: int
    setup_s: float
    iterate_s: float

    @property
    def ns_per_edge(self) -> float:
        """Wall time of the iterations per edge per iteration, in ns (the last matrix-vector
        product, whose change is below the tolerance, is counted too)."""
        return self.iterate_s / max(self.edges * (self.iterations + 1), 1) * 1e9


def blocks(n: int, size: int) -> np.ndarray:
    """The ``size + 1`` bounds of the rank blocks of ``n`` rows: rank ``r`` owns
    ``[bounds[r], bounds[r + 1])``."""
    return np.arange(size + 1, dtype=np.int64) * n // size


def rank_files(out: Path) -> list[int]:
    """The number of rows of each rank file of the crawl in ``out``, in rank order."""
    with h5py.File(out / "crawl.h5", "r") as f:
        ranks = int(f.attrs["ranks"])
    sizes = []
    for r in range(ranks):
        with h5py.File(rank_path(out, r), "r") as f:
            sizes.append(f["pages/url_fp"].shape[0])
    return sizes


def read_graph(out: Path, sizes: list[int], lo: int, hi: int) -> Graph:
    """Read the global rows ``[lo, hi)`` of the crawl in ``out`` (rank files of ``sizes``
    rows) and their out-links; a 3xx page's link is its redirect target."""
    first = np.concatenate(([0], np.cumsum(sizes)))
    fps, srcs, targets = [], [], []
    for r, size in enumerate(sizes):
        a, b = max(lo, first[r]) - first[r], min(hi, first[r] + size) - first[r]
        if a >= b:
            continue
        with h5py.File(rank_path(out, r), "r") as f:
            fps.append(f["pages/url_fp"][a:b])
            offsets = f["links/offsets"][a:b + 1]
            at = first[r] + a - lo  # local row of row a
            srcs.append(at + np.repeat(np.arange(b - a), np.diff(offsets)))
            targets.append(f["links/targets"][offsets[0]:offsets[-1]])
            status = f["pages/status"][a:b]
            moved = np.flatnonzero((status >= 300) & (status < 400))
            if len(moved):
                urls = f["pages/redirect"].asstr()[a:b][moved]
                moved, urls = moved[urls != ""], urls[urls != ""]
                strip = strip_pattern(json.loads(f.attrs["settings"]).get("url_strip_params"))
                srcs.append(at + moved)
                targets.append(key_fingerprints(urls.tolist(), strip))
    none = [np.zeros(0, np.int64)]
    return Graph(lo, np.concatenate(fps + none), np.concatenate(srcs + none).astype(np.int64),
                 np.concatenate(targets + none))


def alltoallv(comm: MPI.Comm, values: np.ndarray, counts: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Send ``values`` (1-D, grouped by destination: ``counts[r]`` items for rank ``r``);
    returns what every rank sent this one, in rank order, and how many from each."""
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    recv_counts = np.empty_like(counts)
    wait([comm.Ialltoall(counts, recv_counts)])
    item = values.dtype.itemsize
    got = exchange(comm, np.ascontiguousarray(values).view(np.uint8), counts * item,
                   recv_counts * item)
    return got.view(values.dtype), recv_counts


def _by_rank(owner: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The order grouping items by their ``owner`` rank (stable), and the counts."""
    return np.argsort(owner, kind="stable"), np.bincount(owner, minlength=size)


def resolve(comm: MPI.Comm, graph: Graph) -> np.ndarray:
    """The global row of each ``graph.target`` (-1: not a fetched page), through a
    directory: the (fingerprint, row) pairs of every page go to rank ``fp mod P``, which
    answers the distinct fingerprints asked of it (a fingerprint of several rows: the
    first)."""
    size = comm.Get_size()
    home = (graph.fp.view(np.uint64) % size).astype(np.int64)
    order, counts = _by_rank(home, size)
    pairs = np.stack((graph.fp, graph.lo + np.arange(len(graph.fp))), axis=1)[order]
    got, _ = alltoallv(comm, pairs.ravel(), 2 * counts)
    known_fp, known_row = got[0::2], got[1::2]
    by = np.lexsort((known_row, known_fp))
    known_fp, known_row = known_fp[by], known_row[by]
    first = np.concatenate(([True], known_fp[1:] != known_fp[:-1]))[:len(known_fp)]
    known_fp, known_row = known_fp[first], known_row[first]

    asked, inverse = np.unique(graph.target, return_inverse=True)
    order, counts = _by_rank((asked.view(np.uint64) % size).astype(np.int64), size)
    questions, recv_counts = alltoallv(comm, asked[order], counts)
    answers = np.full(len(questions), -1, np.int64)
    if len(known_fp):
        at = np.minimum(np.searchsorted(known_fp, questions), len(known_fp) - 1)
        hit = known_fp[at] == questions
        answers[hit] = known_row[at[hit]]
    rows, _ = alltoallv(comm, answers, recv_counts)
    row_of_asked = np.empty(len(asked), np.int64)
    row_of_asked[order] = rows
    return row_of_asked[inverse]


def edges(src: np.ndarray, dst: np.ndarray, lo: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The graph's edges among (local ``src``, global ``dst``) link pairs of the rows
    starting at global row ``lo`` (``n`` rows in all): unfetched targets (-1), self-links
    and repeats dropped; sorted by target, then source."""
    keep = (dst >= 0) & (dst != lo + src)
    key = distinct(dst[keep] * n + src[keep])
    return key % n, key // n


def distinct(a: np.ndarray) -> np.ndarray:
    """The distinct values of ``a``, sorted: a sort and a comparison (at 10^7 int64, 0.15 s
    where ``np.unique``'s hash table took 3.2 s)."""
    s = np.sort(a)
    return s[np.concatenate(([True], s[1:] != s[:-1]))[:len(s)]]


class Iteration:
    """One rank's part of the PageRank iteration once the setup superstep is done.

    ``matrix`` sums the contributions of the local pages to each distinct target row,
    grouped by the target's owner (``send_counts`` for each rank); ``recv_rows`` are the
    local rows the sums received are for, in the order they arrive (fixed at setup).
    """

    def __init__(self, comm: MPI.Comm, src: np.ndarray, dst: np.ndarray, bounds: np.ndarray,
                 damping: float) -> None:
        rank, size = comm.Get_rank(), comm.Get_size()
        self.comm, self.damping = comm, damping
        self.n_total = int(bounds[-1])
        lo, hi = int(bounds[rank]), int(bounds[rank + 1])
        n = hi - lo
        degree = np.bincount(src, minlength=n)
        self.dangling = degree == 0
        self.inv_degree = np.divide(1.0, degree, out=np.zeros(n), where=degree > 0)
        starts = np.flatnonzero(np.concatenate(([True], dst[1:] != dst[:-1]))[:len(dst)])
        targets = dst[starts]  # the distinct targets, sorted: grouped by owner
        index = np.int32 if max(n, len(src)) < 2**31 else np.int64
        self.matrix = sp.csr_matrix(  # edges come sorted by target, then source
            (np.ones(len(src)), src.astype(index), np.append(starts, len(dst)).astype(index)),
            shape=(len(targets), n))
        self.send_counts = np.bincount(np.searchsorted(bounds, targets, "right") - 1,
                                       minlength=size)
        rows, self.recv_counts = alltoallv(comm, targets, self.send_counts)
        self.recv_rows = rows - lo
        self.n = n

    def step(self, x: np.ndarray, previous_change: float) -> tuple[np.ndarray, float]:
        """Send this block's contributions and sum the ones received; returns the next
        block and the global L1 change of the previous step (this block's is
        ``previous_change``), summed in the ``Iallreduce`` that sums the dangling mass."""
        local = np.array([x[self.dangling].sum(), previous_change])
        total = np.empty(2)
        request = self.comm.Iallreduce(local, total, MPI.SUM)
        sums = self.matrix @ (x * self.inv_degree)
        got = exchange(self.comm, sums.view(np.uint8), 8 * self.send_counts,
                       8 * self.recv_counts).view(np.float64)
        wait([request])
        received = np.bincount(self.recv_rows, weights=got, minlength=self.n)
        teleport = (self.damping * total[0] + 1.0 - self.damping) / self.n_total
        return self.damping * received + teleport, float(total[1])


def pagerank(comm: MPI.Comm, sizes: list[int], read: Callable[[int, int], Graph],
             damping: float = DAMPING, tolerance: float = TOLERANCE,
             max_iterations: int = MAX_ITERATIONS) -> Result:
    """PageRank of the graph of ``sizes`` rows per rank file, where ``read(lo, hi)`` gives
    the :class:`Graph` of rows ``[lo, hi)``; every rank of ``comm`` calls it and gets its
    block (:func:`blocks`) of the vector."""
    started = time.perf_counter()
    rank, size = comm.Get_rank(), comm.Get_size()
    bounds = blocks(sum(sizes), size)
    graph = read(int(bounds[rank]), int(bounds[rank + 1]))
    n_total = int(bounds[-1])
    src, dst = edges(graph.src, resolve(comm, graph), graph.lo, max(n_total, 1))
    it = Iteration(comm, src, dst, bounds, damping)
    counts = np.array([len(src), int(it.dangling.sum())], dtype=np.int64)
    totals = np.empty_like(counts)
    wait([comm.Iallreduce(counts, totals, MPI.SUM)])
    setup_s = time.perf_counter() - started
    x = np.full(it.n, 1.0 / max(n_total, 1))
    change, iterations = np.inf, 0
    while n_total:
        new, previous = it.step(x, change)
        if previous < tolerance or iterations == max_iterations:
            change = previous
            break
        change = float(np.abs(new - x).sum())
        x, iterations = new, iterations + 1
    return Result(x, iterations, float(change if n_total else 0.0), n_total, int(totals[0]),
                  int(totals[1]), setup_s, time.perf_counter() - started - setup_s)


def gather(comm: MPI.Comm, x: np.ndarray, bounds: np.ndarray) -> np.ndarray | None:
    """The whole vector on rank 0 (None on the others), from every rank's block."""
    whole = np.empty(int(bounds[-1])) if comm.Get_rank() == 0 else None
    counts = np.diff(bounds)
    wait([comm.Igatherv(x, [whole, (counts, bounds[:-1]), MPI.DOUBLE], root=0)])
    return whole


def store(out: Path, sizes: list[int], x: np.ndarray, attrs: dict) -> None:
    """Write ``/rank/pagerank`` (and ``attrs`` on ``/rank``) into every rank file of the
    crawl in ``out``, each through a copy and a rename, then join ``crawl.h5`` again."""
    first = np.concatenate(([0], np.cumsum(sizes)))
    for r in range(len(sizes)):
        def fill(f: h5py.File, r: int = r) -> None:
            if "rank" in f:
                del f["rank"]
            f.create_dataset("rank/pagerank", data=x[first[r]:first[r + 1]])
            f["rank"].attrs.update(attrs)

        write_atomically(rank_path(out, r), fill, edit=True)
    with h5py.File(out / "crawl.h5", "r") as f:
        summary = {k: v for k, v in f.attrs.items()
                   if k not in ("format", "layout", "version", "ranks", "joined")}
    join(out, len(sizes), summary)

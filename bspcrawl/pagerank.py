"""PageRank over a finished crawl's link graph, as BSP supersteps (``bspcrawl rank``).

Page, Brin, Motwani and Winograd, "The PageRank citation ranking", iterated as Pregel
(Malewicz et al.) does: rank ``r`` of ``P`` owns the block ``[N r / P, N (r + 1) / P)`` of
global rows (whatever the crawl's rank count) and each superstep sends the mass its pages
give to other ranks' pages. One setup superstep resolves link fingerprints to rows through
a directory at rank ``fp mod P`` and fixes what each rank sends to each other; then an
iteration is one sparse product, one ``Ialltoallv`` and one ``Iallreduce`` of the dangling
mass and the last step's change, so convergence is seen one step late without a second
collective. The graph is defined in ``docs/output.md``; the vector is the same to 1e-9 on
any number of ranks.
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
    """One rank's rows ``[lo, lo + len(fp))``, their URL fingerprints, and their out-links
    as (local row ``src``, fingerprint ``target``), repeats and unfetched targets still in."""

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
        """Wall time per edge per iteration, in ns, the last (converged) product included."""
        return self.iterate_s / max(self.edges * (self.iterations + 1), 1) * 1e9


def blocks(n: int, size: int) -> np.ndarray:
    """The ``size + 1`` bounds of the rank blocks of ``n`` rows."""
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
    """The graph of global rows ``[lo, hi)``; a 3xx page links to its redirect target."""
    first = np.concatenate(([0], np.cumsum(sizes)))
    fps, srcs, targets = [], [], []
    for r, size in enumerate(sizes):
        a, b = max(lo, first[r]) - first[r], min(hi, first[r] + size) - first[r]
        if a >= b:
            continue
        with h5py.File(rank_path(out, r), "r") as f:
            fps.append(f["pages/url_fp"][a:b])
            offsets = f["links/offsets"][a:b + 1]
            at = first[r] + a - lo
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
    """Send ``counts[r]`` of ``values`` (grouped by destination) to rank ``r``; returns what
    this rank received, in rank order, and how many from each."""
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    recv_counts = np.empty_like(counts)
    wait([comm.Ialltoall(counts, recv_counts)])
    item = values.dtype.itemsize
    got = exchange(comm, np.ascontiguousarray(values).view(np.uint8), counts * item,
                   recv_counts * item)
    return got.view(values.dtype), recv_counts


def _by_rank(owner: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    return np.argsort(owner, kind="stable"), np.bincount(owner, minlength=size)


def resolve(comm: MPI.Comm, graph: Graph) -> np.ndarray:
    """The global row of each ``graph.target`` (-1: not fetched; of several rows, the
    first), asked of the rank ``fp mod P`` that holds the fingerprint's rows."""
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
    """The edges among (local ``src``, global ``dst``) link pairs, sorted by target then
    source, without unfetched targets (-1), self-links or repeats."""
    keep = (dst >= 0) & (dst != lo + src)
    key = np.sort(dst[keep] * n + src[keep])  # a sort: cheaper than np.unique's hashing
    key = key[np.concatenate(([True], key[1:] != key[:-1]))[:len(key)]]
    return key % n, key // n


class Iteration:
    """One rank's part of the iteration: ``matrix`` sums its pages' contributions to each
    distinct target, grouped by owner; ``recv_rows``: the local rows of the sums received."""

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
        targets = dst[starts]
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
        """The next block, and the global L1 change of the previous step (this block's:
        ``previous_change``), summed along with the dangling mass."""
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
    """PageRank of the graph of ``sizes`` rows per rank file (``read(lo, hi)``: its rows);
    every rank of ``comm`` calls it and gets its block of the vector."""
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
    """The whole vector on rank 0, None on the others."""
    whole = np.empty(int(bounds[-1])) if comm.Get_rank() == 0 else None
    counts = np.diff(bounds)
    wait([comm.Igatherv(x, [whole, (counts, bounds[:-1]), MPI.DOUBLE], root=0)])
    return whole


def store(out: Path, sizes: list[int], x: np.ndarray, attrs: dict) -> None:
    """Write ``/rank/pagerank`` and ``attrs`` into every rank file, then join ``crawl.h5``
    again."""
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

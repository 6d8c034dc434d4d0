"""Benchmark of ``bspcrawl rank``'s PageRank iterations against scipy on the same graph.

Builds a random link graph in memory (--pages pages, Poisson(--degree) links each, to
uniformly random pages: the worst case for caches), and runs on it, in this process:

1. ``bspcrawl.pagerank.pagerank`` on ``MPI.COMM_SELF`` (what ``bspcrawl rank`` runs on one
   rank, minus reading the HDF5 files): the setup superstep, then the iterations to an L1
   change below --tolerance; ns per edge per iteration of the iterations alone;
2. scipy: the bare sparse matrix-vector product ``Aᵀ D⁻¹ x`` (CSR, float64) repeated as many
   times, and the same PageRank loop (product, dangling mass, teleport, L1 change) written
   with scipy, whose vector must equal ours to 1e-9.

Prints a markdown table and writes JSON to --out.

    .venv/bin/python scripts/bench_rank.py [--pages 1000000] [--degree 10] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
from mpi4py import MPI

from bspcrawl import pagerank


def make_graph(pages: int, degree: float, seed: int) -> pagerank.Graph:
    """A random graph as one rank reads it: fingerprints and (source, target fp) links."""
    rng = np.random.default_rng(seed)
    fp = rng.choice(2**62, pages, replace=False).astype(np.int64)
    counts = rng.poisson(degree, pages)
    src = np.repeat(np.arange(pages, dtype=np.int64), counts)
    return pagerank.Graph(0, fp, src, fp[rng.integers(pages, size=len(src))])


def scipy_pagerank(walk_t: sp.csr_matrix, dangling: np.ndarray, damping: float,
                   tolerance: float) -> tuple[np.ndarray, int, float]:
    """PageRank by power iteration with scipy; returns the vector, iterations, seconds."""
    n = walk_t.shape[0]
    x = np.full(n, 1.0 / n)
    started, iterations = time.perf_counter(), 0
    while True:
        new = damping * (walk_t @ x) + (damping * x[dangling].sum() + 1 - damping) / n
        change = np.abs(new - x).sum()
        x, iterations = new, iterations + 1
        if change < tolerance:
            return x, iterations, time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=1_000_000)
    ap.add_argument("--degree", type=float, default=10.0, help="mean links a page")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tolerance", type=float, default=pagerank.TOLERANCE)
    ap.add_argument("--out", default="results/bench_rank.json")
    args = ap.parse_args()

    graph = make_graph(args.pages, args.degree, args.seed)
    ours = pagerank.pagerank(MPI.COMM_SELF, [args.pages], lambda lo, hi: graph,
                             tolerance=args.tolerance)
    steps = ours.iterations + 1

    dst = pagerank.resolve(MPI.COMM_SELF, graph)  # the same edges, for scipy
    src, dst = pagerank.edges(graph.src, dst, 0, args.pages)
    degree = np.bincount(src, minlength=args.pages)
    walk_t = sp.csr_matrix((1.0 / degree[src], (dst, src)), shape=(args.pages,) * 2)
    x = np.full(args.pages, 1.0 / args.pages)
    started = time.perf_counter()
    for _ in range(steps):
        y = walk_t @ x
    matvec_s = time.perf_counter() - started
    assert y.shape == x.shape
    theirs, their_iterations, loop_s = scipy_pagerank(walk_t, degree == 0, pagerank.DAMPING,
                                                      args.tolerance)
    diff = float(np.abs(ours.x - theirs).max())
    assert diff < 1e-9, diff

    edges = len(src)
    rows = [("bspcrawl rank, iterations (P = 1)", ours.iterate_s, steps),
            ("scipy CSR matvec alone", matvec_s, steps),
            ("scipy PageRank loop", loop_s, their_iterations)]
    print(f"{args.pages} pages, {edges} edges, {ours.iterations} iterations "
          f"(+1 to see the change fall below {args.tolerance}); setup superstep "
          f"{ours.setup_s:.2f} s; max |ours - scipy| = {diff:.1e}\n")
    print("| what | s | ns per edge per iteration | vs scipy matvec |")
    print("| --- | --- | --- | --- |")
    result = {"args": vars(args), "python": platform.python_version(),
              "numpy": np.__version__, "scipy": scipy.__version__,
              "machine": platform.processor() or platform.machine(), "edges": edges,
              "iterations": ours.iterations, "setup_s": ours.setup_s, "max_diff": diff,
              "rows": []}
    base = matvec_s / (edges * steps) * 1e9
    for what, seconds, n in rows:
        ns = seconds / (edges * n) * 1e9
        print(f"| {what} | {seconds:.3f} | {ns:.2f} | {ns / base:.2f}x |")
        result["rows"].append({"what": what, "seconds": seconds, "steps": n, "ns_per_edge": ns})
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()

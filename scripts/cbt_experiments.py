"""Reproduce the queue experiments of Marin, Paredes, Bonacic (WIDM 2008): Table 1 and
Figs. 8, 9 and 10, on bspcrawl.cbt's CBT, ParallelCBT, QuickHeap and BinaryHeap.

Workload: a crawler's frontier.  The queue starts with --items URLs (random 64-bit ids,
priorities 1 + Pareto(--alpha): heavy tailed like PageRank, whose tail exponent is
about 1.1); each round (superstep) extracts the top R and then inserts R newly found
URLs with priorities from the same law, so the queue keeps its size.  --warm rounds
run before the --rounds measured ones, so the structures reach their steady state.

* Table 1: T CBTs (ParallelCBT, --items in all, items hashed to trees), each round an
  extract-top(R/T) on every tree then insert-many(R/T) on every tree (new ids chosen
  so each tree gets exactly R/T), R = 8,000.  Work = key comparisons per tree per
  operation (pending matches replayed right after each operation, so each is charged
  its own work); efficiency = mean over rounds of (mean work per tree) / mean over
  rounds of (max work in any tree).  Buckets of --table1-bucket items (16: an
  operation at T = 8 touches some 60 buckets) and of the frontier's default 256 (some
  4 buckets: the work per operation is lumpier); and the insert as the crawler does
  it, R new ids split by their hash (about R/T each, not exactly).  Last column: the
  share of each batch (the union of the trees' top R/T) that is in the queue's top R.
* Fig. 8: key comparisons per round (extract R + insert R) of the QuickHeap, the
  binary heap and the CBT (--bucket items per bucket) as R grows, averaged over
  enough rounds to extract --sweep of the queue (the QuickHeap's cost is amortized:
  a round that reaches a large chunk partitions it).  Fig. 5 reports the
  R items unordered; our QuickHeap sorts them, and that sort is shown apart.
* Fig. 9: block I/O per round (reads + write-backs) under an LRU memory of 10% and
  30% of the queue, in blocks of --block items, same runs as Fig. 8.
* Fig. 10: wall time per round of a ParallelCBT with T trees worked by T threads,
  speed-up = time(T = 1) / time(T); also the same T trees on one thread, to tell the
  threads' gain from the smaller trees', and what the threads gain on numpy's argsort
  alone (it releases the GIL; most of a CBT step is Python that holds it).  Median of
  --reps repetitions, interleaved.
  Only T up to the number of cores means anything; by default T runs to max(2, cores).

Writes results/cbt_experiments.h5 and results/*.png (needs matplotlib, the [bench]
extra; without it the PNGs are skipped) and prints markdown tables.

    .venv/bin/python scripts/cbt_experiments.py            # 10^6 items, a few minutes
    .venv/bin/python scripts/cbt_experiments.py --quick    # 10^5 items, < 1 minute
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py
import numpy as np

from bspcrawl.cbt import CBT, BinaryHeap, BlockCache, BulkQueue, ParallelCBT, QuickHeap

PAPER_TABLE1 = {1: (1.00, 1.00), 2: (0.99, 0.98), 4: (0.98, 0.97), 8: (0.95, 0.93)}
MEMORY = (0.10, 0.30)  # Fig. 9: memory as a fraction of the queue
QUEUES = ("QuickHeap", "BinaryHeap", "CBT")


class Stream:
    """Distinct random-looking ids (a bijective mix of a counter) and 1 + Pareto(alpha)
    priorities, handed out in order."""

    def __init__(self, alpha: float, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.alpha = alpha
        self.next = seed << 40

    def ids(self, m: int) -> np.ndarray:
        x = np.arange(self.next, self.next + m, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        self.next += m
        x ^= x >> np.uint64(29)
        return (x * np.uint64(0xBF58476D1CE4E5B9)).view(np.int64)

    def prios(self, m: int) -> np.ndarray:
        return 1.0 + self.rng.pareto(self.alpha, m)


# ---------------------------------------------------------------------- Table 1


def table1(args: argparse.Namespace, bucket: int, hashed: bool) -> dict[int, tuple]:
    """T -> (extract efficiency, insert efficiency, mean extract work, mean insert work,
    share of each extracted batch that is in the whole queue's top R)."""
    out = {}
    for t in (1, 2, 4, 8):
        s = Stream(args.alpha, args.seed)
        q = ParallelCBT(t, bucket, threads=1)
        q.insert_many(s.ids(args.items), s.prios(args.items))
        q.flush()
        need = args.batch // t
        rounds = args.warm + args.rounds
        pool = s.ids(2 * args.batch * rounds + 1000)
        which = q.tree_of(pool)
        by_tree = [pool[which == i] for i in range(t)]
        work = np.zeros((2, args.rounds, t))
        overlap = []
        for k in range(rounds):
            ids, prios = (np.concatenate(x) for x in zip(*(tr.peek(args.batch)
                                                             for tr in q.trees), strict=True))
            best = ids[np.lexsort((ids, -prios))[:args.batch]]  # the whole queue's top R
            c0 = _comparisons(q)
            batch = q.extract_many(args.batch)[0]
            q.flush()
            c1 = _comparisons(q)
            overlap.append(np.isin(batch, best).mean())
            if hashed:
                new = pool[k * args.batch:(k + 1) * args.batch]
            else:
                new = np.concatenate([b[k * need:(k + 1) * need] for b in by_tree])
            q.insert_many(new, s.prios(new.size))
            q.flush()
            if k >= args.warm:
                work[0, k - args.warm], work[1, k - args.warm] = c1 - c0, _comparisons(q) - c1
        eff = work.mean(2).mean(1) / work.max(2).mean(1)
        out[t] = (float(eff[0]), float(eff[1]), float(work[0].mean()), float(work[1].mean()),
                  float(np.mean(overlap)))
    return out


def _comparisons(q: ParallelCBT) -> np.ndarray:
    return np.array([t.counters["queue/comparisons"] for t in q.trees], np.float64)


# ---------------------------------------------------------------------- Figs. 8 and 9


def make_queue(kind: str, caches: list[BlockCache], bucket: int) -> BulkQueue:
    if kind == "CBT":
        return CBT(bucket, caches)
    return QuickHeap(caches=caches) if kind == "QuickHeap" else BinaryHeap(caches)


def queue_costs(args: argparse.Namespace, kind: str, r: int) -> dict[str, float]:
    """Per round (extract r + insert r): comparisons, the QuickHeap's output sort, and
    I/O at each memory size; plus seconds per round."""
    s = Stream(args.alpha, args.seed)
    caches = [BlockCache(int(f * args.items), args.block) for f in MEMORY]
    q = make_queue(kind, caches, args.bucket)
    q.insert_many(s.ids(args.items), s.prios(args.items))
    n = max(args.rounds, math.ceil(args.sweep * args.items / r))
    for k in range(args.warm + n):
        if k == args.warm:
            c0, io0, t0 = dict(q.counters), [c.io for c in caches], time.perf_counter()
        q.extract_many(r)
        q.insert_many(s.ids(r), s.prios(r))
    res = {"comparisons": (q.counters["queue/comparisons"] - c0["queue/comparisons"]) / n,
           "order_comparisons": (q.counters.get("quickheap/order_comparisons", 0)
                                 - c0.get("quickheap/order_comparisons", 0)) / n,
           "seconds": (time.perf_counter() - t0) / n}
    for f, c, i0 in zip(MEMORY, caches, io0, strict=True):
        res[f"io_{round(100 * f)}"] = (c.io - i0) / n
    return res


# ---------------------------------------------------------------------- Fig. 10


def speedups(args: argparse.Namespace, ts: list[int]) -> list[dict[str, float]]:
    """Seconds per round (median of --reps) for T trees on 1 and on T threads."""
    configs = [(t, th) for t in ts for th in sorted({1, t})]
    queues, streams = {}, {}
    for t, th in configs:
        s = Stream(args.alpha, args.seed)
        q = ParallelCBT(t, args.bucket, threads=th)
        q.insert_many(s.ids(args.items), s.prios(args.items))
        for _ in range(args.warm):
            q.extract_many(args.batch)
            q.insert_many(s.ids(args.batch), s.prios(args.batch))
        queues[t, th], streams[t, th] = q, s
    wall: dict[tuple[int, int], list[float]] = {c: [] for c in configs}
    cpu: dict[tuple[int, int], list[float]] = {c: [] for c in configs}
    for _ in range(args.reps):
        for c in configs:
            q, s = queues[c], streams[c]
            batches = [(s.ids(args.batch), s.prios(args.batch)) for _ in range(args.rounds)]
            t0, p0 = time.perf_counter(), time.process_time()
            for ids, prios in batches:
                q.extract_many(args.batch)
                q.insert_many(ids, prios)
            wall[c].append((time.perf_counter() - t0) / args.rounds)
            cpu[c].append((time.process_time() - p0) / args.rounds)
    for q in queues.values():
        q.close()
    base = statistics.median(wall[1, 1])
    rows = []
    for t in ts:
        w1, wt = statistics.median(wall[t, 1]), statistics.median(wall[t, t])
        rows.append({"T": t, "s_one_thread": w1, "s_T_threads": wt,
                     "cpu_T_threads": statistics.median(cpu[t, t]),
                     "speedup": base / wt, "thread_gain": w1 / wt,
                     "sort_thread_gain": sort_gain(args, t)})
    return rows


def sort_gain(args: argparse.Namespace, t: int) -> float:
    """What T threads gain on numpy's argsort alone (it releases the GIL): T arrays of
    R/T keys, 100 sorts each, sequential time / threaded time, median of --reps."""
    if t == 1:
        return 1.0
    rng = np.random.default_rng(args.seed)
    arrays = [rng.integers(0, 2**62, args.batch // t) for _ in range(t)]

    def work(a: np.ndarray) -> None:
        for _ in range(100):
            np.argsort(a, kind="stable")

    gains = []
    with ThreadPoolExecutor(t) as pool:
        for _ in range(args.reps):
            t0 = time.perf_counter()
            for a in arrays:
                work(a)
            t1 = time.perf_counter()
            list(pool.map(work, arrays))
            gains.append((t1 - t0) / (time.perf_counter() - t1))
    return statistics.median(gains)


# ---------------------------------------------------------------------- output


def md_table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |",
             "| " + " | ".join("---:" for _ in head) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def plots(out: Path, rs: list[int], costs: dict, fig10: list[dict]) -> list[Path]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install matplotlib): no PNGs", file=sys.stderr)
        return []
    files = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for kind in QUEUES:
        ax.plot(rs, [costs[kind][r]["comparisons"] / (2 * r) for r in rs], "o-", label=kind)
    ax.plot(rs, [(costs["QuickHeap"][r]["comparisons"] - costs["QuickHeap"][r]
                  ["order_comparisons"]) / (2 * r) for r in rs], "o--",
            label="QuickHeap, Fig. 5 (no output sort)")
    ax.set(xscale="log", xlabel="R", ylabel="key comparisons per item",
           title="Fig. 8: extract R + insert R", ylim=(0, None))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    files.append(out / "fig8_comparisons.png")
    fig.savefig(files[-1], dpi=120, bbox_inches="tight")
    fig, axes = plt.subplots(1, len(MEMORY), figsize=(11, 4), sharey=True)
    for ax, f in zip(axes, MEMORY, strict=True):
        for kind in QUEUES:
            ax.plot(rs, [costs[kind][r][f"io_{round(100 * f)}"] for r in rs], "o-", label=kind)
        ax.set(xscale="log", yscale="log", xlabel="R", title=f"memory {f:.0%} of the queue")
    axes[0].set_ylabel("block I/O per round")
    axes[0].legend()
    fig.suptitle("Fig. 9: I/O operations")
    files.append(out / "fig9_io.png")
    fig.savefig(files[-1], dpi=120, bbox_inches="tight")
    fig, ax = plt.subplots(figsize=(6, 4))
    ts = [row["T"] for row in fig10]
    ax.plot(ts, [row["speedup"] for row in fig10], "o-", label="T trees, T threads")
    ax.plot(ts, [row["speedup"] / row["thread_gain"] for row in fig10], "s--",
            label="T trees, 1 thread")
    ax.plot(ts, ts, ":", color="grey", label="ideal")
    ax.set(xlabel="T", ylabel="speed-up over T = 1", title="Fig. 10: speed-up")
    ax.legend()
    files.append(out / "fig10_speedup.png")
    fig.savefig(files[-1], dpi=120, bbox_inches="tight")
    return files


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, a smoke test")
    ap.add_argument("--items", type=int, help="queue size (default 10^6, quick 10^5)")
    ap.add_argument("--batch", type=int, default=8000, help="R of Table 1 and Fig. 10")
    ap.add_argument("--r", type=int, nargs="+", help="R values of Figs. 8 and 9")
    ap.add_argument("--rounds", type=int, help="measured rounds (default 12, quick 4)")
    ap.add_argument("--sweep", type=float, default=0.25,
                    help="Figs. 8-9: more rounds if needed to extract this part of the queue")
    ap.add_argument("--warm", type=int, help="rounds before measuring (default 3, quick 1)")
    ap.add_argument("--reps", type=int, help="Fig. 10 repetitions (default 5, quick 2)")
    ap.add_argument("--bucket", type=int, default=256, help="CBT bucket size (Figs. 8-10)")
    ap.add_argument("--table1-bucket", type=int, default=16, help="CBT bucket size, Table 1")
    ap.add_argument("--block", type=int, default=256, help="items per block (Fig. 9)")
    ap.add_argument("--threads", type=int, nargs="+",
                    help="Fig. 10 T values (default: 1, 2, 4, ... up to max(2, cores))")
    ap.add_argument("--alpha", type=float, default=1.1, help="Pareto shape of priorities")
    ap.add_argument("--seed", type=int, default=2008)
    ap.add_argument("--out", default="results", help="directory for the .h5 and the PNGs")
    args = ap.parse_args(argv)
    quick = args.quick
    args.items = args.items or (10**5 if quick else 10**6)
    args.r = args.r or ([500, 2000, 8000] if quick else [1000, 2000, 4000, 8000, 16000, 32000])
    args.rounds = args.rounds or (4 if quick else 12)
    args.warm = args.warm if args.warm is not None else (1 if quick else 3)
    args.reps = args.reps or (2 if quick else 5)
    cores = os.cpu_count() or 1
    ts = args.threads or [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= max(2, cores)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print(f"{args.items:,} items, Pareto({args.alpha}) priorities, {args.warm} warm-up + "
          f"{args.rounds} measured rounds, {cores} cores (load average "
          f"{os.getloadavg()[0]:.1f}), Python {platform.python_version()}")

    t1 = table1(args, args.table1_bucket, hashed=False)
    t1_256 = table1(args, 256, hashed=False)
    t1_hash = table1(args, args.table1_bucket, hashed=True)
    rows = [[str(t), f"{args.batch // t:,}", f"{t1[t][0]:.3f}", f"{t1[t][1]:.3f}",
             f"{t1_256[t][0]:.3f}", f"{t1_256[t][1]:.3f}", f"{t1_hash[t][1]:.3f}",
             f"{PAPER_TABLE1[t][0]:.2f}", f"{PAPER_TABLE1[t][1]:.2f}",
             f"{t1_hash[t][4]:.1%}"] for t in t1]
    print(f"\n### Table 1: efficiency of extract and insert (R = {args.batch:,})\n")
    print(md_table(["T", "R/T", f"extract (n={args.table1_bucket})",
                    f"insert (n={args.table1_bucket})", "extract (n=256)", "insert (n=256)",
                    "insert, hash split", "paper extract", "paper insert",
                    "batch in global top R"], rows))

    costs = {k: {r: queue_costs(args, k, r) for r in args.r} for k in QUEUES}
    print(f"\n### Fig. 8: key comparisons per round (extract R + insert R; CBT bucket "
          f"{args.bucket})\n")
    rows = []
    for r in args.r:
        qh = costs["QuickHeap"][r]
        rows.append([f"{r:,}", f"{qh['comparisons']:,.0f}",
                     f"{qh['comparisons'] - qh['order_comparisons']:,.0f}",
                     f"{costs['BinaryHeap'][r]['comparisons']:,.0f}",
                     f"{costs['CBT'][r]['comparisons']:,.0f}"]
                    + [f"{costs[k][r]['comparisons'] / (2 * r):.1f}" for k in QUEUES])
    print(md_table(["R", "QuickHeap", "QuickHeap, Fig. 5 only", "binary heap", "CBT",
                    "QH / item", "BH / item", "CBT / item"], rows))
    print(f"\n### Fig. 9: block I/O per round (LRU memory, blocks of {args.block} items)\n")
    rows = [[f"{r:,}"] + [f"{costs[k][r][f'io_{round(100 * f)}']:,.0f}"
                          for f in MEMORY for k in QUEUES] for r in args.r]
    print(md_table(["R"] + [f"{k} {f:.0%}" for f in MEMORY for k in
                            ("QH", "BH", "CBT")], rows))
    print("\nseconds per round: " + ", ".join(
        f"{k} {np.mean([costs[k][r]['seconds'] for r in args.r]):.3f}" for k in QUEUES))

    fig10 = speedups(args, ts)
    print(f"\n### Fig. 10: speed-up of T trees on T threads (R = {args.batch:,}, bucket "
          f"{args.bucket}, {cores} cores, load average {os.getloadavg()[0]:.1f}, median of "
          f"{args.reps})\n")
    print(md_table(["T", "ms/round, 1 thread", "ms/round, T threads", "CPU/wall, T threads",
                    "speed-up vs T=1", "gain of threads", "gain of threads, argsort alone"],
                   [[str(x["T"]), f"{1e3 * x['s_one_thread']:.1f}",
                     f"{1e3 * x['s_T_threads']:.1f}",
                     f"{x['cpu_T_threads'] / x['s_T_threads']:.2f}",
                     f"{x['speedup']:.2f}", f"{x['thread_gain']:.2f}",
                     f"{x['sort_thread_gain']:.2f}"] for x in fig10]))

    path = out / "cbt_experiments.h5"
    with h5py.File(path, "w") as f:
        f.attrs.update({k: str(v) for k, v in vars(args).items()})
        f.attrs["cores"], f.attrs["numpy"] = cores, np.__version__
        g = f.create_group("table1")
        g["T"] = list(t1)
        for name, res in (("main", t1), ("bucket256", t1_256), ("hash_split", t1_hash)):
            for j, col in enumerate(("extract", "insert", "extract_work", "insert_work",
                                     "top_r_share")):
                g[f"{name}/{col}"] = [res[t][j] for t in t1]
        g["paper/extract"] = [PAPER_TABLE1[t][0] for t in t1]
        g["paper/insert"] = [PAPER_TABLE1[t][1] for t in t1]
        g = f.create_group("fig8_fig9")
        g["R"] = args.r
        for k in QUEUES:
            for col in costs[k][args.r[0]]:
                g[f"{k}/{col}"] = [costs[k][r][col] for r in args.r]
        g = f.create_group("fig10")
        for col in fig10[0]:
            g[col] = [x[col] for x in fig10]
    files = plots(out, args.r, costs, fig10)
    print(f"\nwrote {path}" + "".join(f", {p}" for p in files)
          + f" in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

"""Benchmark of bspcrawl.cbt.CBT against a heapq baseline: one superstep's queue work.

Builds a queue of --items items (random int64 ids, Pareto(--alpha) priorities, heavy
tailed like link-based URL scores), then times --rounds rounds of
``insert_many(--batch new items)`` + ``extract_many(--batch)`` (the paper's R = 8,000)
on the CBT, for each --bucket-size, and on a binary heap (``heapq.heappush`` of
``(-priority, id)`` tuples, ``heapq.heappop``) doing the same work on the same data.
Both break ties by smaller id, so every round's extracted ids must agree: the script
checks that.  Times are wall clock (``time.perf_counter``) of the rounds alone, not
the build; items/s counts inserted + extracted items.

Prints a markdown table and writes JSON to --out.

    .venv/bin/python scripts/bench_cbt.py [--items 1000000] [--batch 8000] [--rounds 20]
        [--bucket-size 256 1024] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import heapq
import json
import platform
import pstats
import sys
import time
from pathlib import Path

import numpy as np

from bspcrawl.cbt import CBT


def make_data(items: int, batch: int, rounds: int, alpha: float, seed: int):
    rng = np.random.default_rng(seed)
    ids = rng.choice(2**62, items + batch * rounds, replace=False).astype(np.int64)
    ids -= 2**61  # negative ids too
    prios = rng.pareto(alpha, ids.size)
    return (ids[:items], prios[:items],
            ids[items:].reshape(rounds, batch), prios[items:].reshape(rounds, batch))


def bench_cbt(bucket: int, data, profile: bool) -> dict:
    ids0, pr0, new_ids, new_pr = data
    t0 = time.perf_counter()
    q = CBT(bucket)
    q.insert_many(ids0, pr0)
    q.peek(1)  # include the replay of the build in the build time
    build = time.perf_counter() - t0
    out = []
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(new_ids.shape[0]):
        q.insert_many(new_ids[k], new_pr[k])
        out.append(q.extract_many(new_ids.shape[1])[0])
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    if prof:
        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(15)
    q._check()
    return {"build_s": build, "rounds_s": dt, "cpu_s": cpu, "out": out,
            "counters": dict(q.counters)}


def bench_heapq(data) -> dict:
    ids0, pr0, new_ids, new_pr = data
    t0 = time.perf_counter()
    h = list(zip((-pr0).tolist(), ids0.tolist(), strict=True))
    heapq.heapify(h)
    build = time.perf_counter() - t0
    push, pop = heapq.heappush, heapq.heappop
    batch = new_ids.shape[1]
    out = []
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(new_ids.shape[0]):
        for item in zip((-new_pr[k]).tolist(), new_ids[k].tolist(), strict=True):
            push(h, item)
        out.append([pop(h)[1] for _ in range(batch)])
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"build_s": build, "rounds_s": dt, "cpu_s": cpu, "out": out}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=1_000_000, help="queue size before the rounds")
    ap.add_argument("--batch", type=int, default=8000, help="R: items inserted and extracted")
    ap.add_argument("--rounds", type=int, default=20, help="K: timed rounds")
    ap.add_argument("--bucket-size", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--alpha", type=float, default=1.5, help="Pareto shape of the priorities")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="results/bench_cbt.json")
    ap.add_argument("--profile", action="store_true", help="cProfile the CBT rounds")
    args = ap.parse_args(argv)

    data = make_data(args.items, args.batch, args.rounds, args.alpha, args.seed)
    work = 2 * args.batch * args.rounds
    base = bench_heapq(data)
    rows = [("heapq (binary heap)", base)]
    for b in args.bucket_size:
        res = bench_cbt(b, data, args.profile)
        for k, (got, want) in enumerate(zip(res["out"], base["out"], strict=True)):
            if got.tolist() != want:
                raise SystemExit(f"bucket {b}: round {k} extracted other items than heapq")
        rows.append((f"CBT bucket_size={b}", res))

    print(f"\n{args.items:,} items, {args.rounds} rounds of insert_many({args.batch:,}) + "
          f"extract_many({args.batch:,}), Pareto({args.alpha}) priorities\n")
    print("| queue | build s | ms / round | CPU ms / round | items/s | vs heapq (wall, CPU) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    report = []
    for name, res in rows:
        rate = work / res["rounds_s"]
        ratio, cpu_ratio = base["rounds_s"] / res["rounds_s"], base["cpu_s"] / res["cpu_s"]
        ms, cpu_ms = (1e3 * res[k] / args.rounds for k in ("rounds_s", "cpu_s"))
        print(f"| {name} | {res['build_s']:.2f} | {ms:.1f} | {cpu_ms:.1f} | {rate:,.0f} "
              f"| {ratio:.1f}x, {cpu_ratio:.1f}x |")
        report.append({"queue": name, "build_s": res["build_s"], "rounds_s": res["rounds_s"],
                       "cpu_s": res["cpu_s"], "items_per_s": rate, "speedup_vs_heapq": ratio,
                       "cpu_speedup_vs_heapq": cpu_ratio, "counters": res.get("counters", {})})
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "python": platform.python_version(),
                               "numpy": np.__version__, "results": report}, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()

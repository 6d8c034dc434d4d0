"""Cost of a checkpoint and of a resume, per million seen URLs.

Builds one rank's frontier as a crawl leaves it (``--seen`` URLs seen over ``--hosts``
hosts, a fraction still waiting in its backlog, robots.txt known for every host), then
times a full ``Frontier.state`` + ``checkpoint.write`` (the checkpoint), and
``checkpoint.read`` + ``Frontier.restore`` (the resume), and reports the bytes written
(the rank file and the backlog's tails). ``scripts/bench_scale.py`` measures incremental
checkpoints on top of a full one.
Writes results/bench_checkpoint.json and prints a markdown table.

    python scripts/bench_checkpoint.py --seen 1000000 --waiting 0.3
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from bspcrawl import checkpoint
from bspcrawl.frontier import Frontier
from bspcrawl.hosts import Host
from bspcrawl.messages import FetchJob, FetchResult, Link
from bspcrawl.partition import Directory
from bspcrawl.settings import Settings

ROBOTS = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 1\n"


def build(seen: int, hosts: int, waiting: float, out: Path) -> Frontier:
    """A frontier with ``seen`` URLs seen, ``waiting`` of them not yet fetched, its backlog
    in ``out``'s frontier directory."""
    f = Frontier(Settings(politeness_min_host_delay=0.0, politeness_response_factor=0.0),
                 backlog_dir=checkpoint.frontier_dir(out, 0))
    rng = np.random.default_rng(1)
    host_of = rng.integers(0, hosts, seen)
    batch = 100_000
    for start in range(0, seen, batch):
        links = [Link(f"http://host{h}.example.org/section/{i % 97}/page-{i}.html", i % 7)
                 for i, h in zip(range(start, min(seen, start + batch)),
                                 host_of[start:start + batch].tolist(), strict=True)]
        f.receive(links)
    done = int(len(f) * (1 - waiting))
    backlog = f.queue.backlog
    for prio, n in backlog.waiting().items():  # as if fetched: gone, still seen
        done -= len(backlog.take(prio, min(n, done)))
    for h in range(hosts):
        key = f"host{h}.example.org:80"
        job = FetchJob(0, 0, f"http://{key[:-3]}/robots.txt", key, robotstxt=True)
        f.hosts.hosts[key] = Host(outstanding=1, robots_in_flight=True)
        f.done(FetchResult(job, status=200, body=ROBOTS))
    return f


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seen", type=int, default=1_000_000)
    p.add_argument("--hosts", type=int, default=10_000)
    p.add_argument("--waiting", type=float, default=0.3, help="fraction not yet fetched")
    p.add_argument("--out", type=Path, default=Path("results/bench_checkpoint.json"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        frontier = build(args.seen, args.hosts, args.waiting, out)
        before = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        t0 = time.perf_counter()
        state = checkpoint.RankState.of(frontier.state([]), Directory(1).state(), [], [])
        t1 = time.perf_counter()
        checkpoint.write(out, 0, 1, state, {"next_seq": 0})
        t2 = time.perf_counter()
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) - before
        state, _ = checkpoint.read(out, 0, 1)
        t3 = time.perf_counter()
        again = Frontier(frontier.settings, backlog_dir=checkpoint.frontier_dir(out, 0))
        again.restore([state.frontier], lambda key: True)
        t4 = time.perf_counter()
    assert len(again) == len(frontier)
    assert np.array_equal(again.seen.to_array(), frontier.seen.to_array())
    per_m = 1e6 / args.seen
    row = {"seen": args.seen, "waiting": len(frontier), "hosts": args.hosts,
           "snapshot_s": t1 - t0, "write_s": t2 - t1, "checkpoint_s": t2 - t0,
           "bytes": size, "read_s": t3 - t2, "restore_s": t4 - t3, "resume_s": t4 - t2,
           "checkpoint_s_per_m": (t2 - t0) * per_m, "bytes_per_m": size * per_m,
           "resume_s_per_m": (t4 - t2) * per_m}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(row, indent=1))
    print(f"\none rank: {args.seen:,} URLs seen, {len(frontier):,} waiting, "
          f"{args.hosts:,} hosts with robots.txt\n")
    print("| checkpoint s (snapshot + write) | bytes | resume s (read + restore) "
          "| checkpoint s / M seen | MB / M seen | resume s / M seen |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(f"| {row['checkpoint_s']:.2f} ({row['snapshot_s']:.2f} + {row['write_s']:.2f}) "
          f"| {size:,} | {row['resume_s']:.2f} ({row['read_s']:.2f} + {row['restore_s']:.2f}) "
          f"| {row['checkpoint_s_per_m']:.2f} | {row['bytes_per_m'] / 1e6:.1f} "
          f"| {row['resume_s_per_m']:.2f} |")


if __name__ == "__main__":
    main()

"""One rank's memory and speed as the crawl grows: frontier, seen set and host state.

A synthetic link stream, no network and no parsing: ``N`` unique URLs
(``http://h{host}.example/p/{i}``) over ``H`` hosts of Zipf-like sizes (host ``h`` gets a
share ~1/h), each URL met about 5 times. Each superstep receives ``--batch`` links: a fifth
are URLs met for the first time, the rest repeats of URLs met before (uniformly). After
each superstep the rank schedules and commits (``next_jobs`` + ``done``, robots.txt answered
404, pages 200) until half the URLs met are committed, so half are still waiting at the end.

Every ``N`` runs in a fresh process (peak RSS is per process), in one of two modes:

- ``frontier``: a real :class:`~bspcrawl.frontier.Frontier` (seen set, CBT, links waiting,
  host state, budgets); then a checkpoint of it as ``superstep.py`` writes it
  (``snapshot`` + ``checkpoint.write``);
- ``seen``: the seen set alone, fed the stream's fingerprints (a 64-bit mix of the URL's
  number, uniform like xxh3's), the unseen ones added as ``Frontier.receive`` does;
  then a checkpoint of its array alone.

and with either seen set: ``array`` (``bspcrawl.seen.SeenSet``) or ``python`` (the
``set[int]`` of before, for the side-by-side ratio). Reported per run: peak RSS; bytes per
unique URL (peak RSS less that of the same run at ``N`` = 1000, over ``N``); the seen
set's own bytes per URL (its arrays; for ``python`` the set and its int objects); links per
second through the seen test alone (``contains_batch`` + ``add_batch``, timed apart from
the rest); checkpoint time and size. Writes results/bench_scale.json and prints a table.

    python scripts/bench_scale.py --urls 1000000 10000000
    python scripts/bench_scale.py --urls 10000000 100000000 --mode seen --seen array
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bspcrawl import checkpoint
from bspcrawl.frontier import Frontier
from bspcrawl.messages import FetchResult, Link
from bspcrawl.seen import SeenSet
from bspcrawl.settings import Settings

BASELINE = 1000  # URLs of the run whose peak RSS is subtracted
MET = 5  # times each URL is met


class PythonSeen:
    """The seen set of before (``set[int]``) behind :class:`SeenSet`'s batch API."""

    def __init__(self) -> None:
        self.fps: set[int] = set()

    def __len__(self) -> int:
        return len(self.fps)

    def contains_batch(self, fps: np.ndarray | list[int]) -> np.ndarray:
        keys = fps.tolist() if isinstance(fps, np.ndarray) else fps
        return np.array([fp in self.fps for fp in keys], dtype=bool)

    def add_batch(self, fps: np.ndarray | list[int]) -> None:
        self.fps.update(fps.tolist() if isinstance(fps, np.ndarray) else fps)

    def to_array(self) -> np.ndarray:
        return np.fromiter(self.fps, np.int64, len(self.fps))

    @property
    def ram_bytes(self) -> int:
        """The set's table and its int objects (pymalloc rounds each up to 16 bytes)."""
        return sys.getsizeof(self.fps) + sum(-(-sys.getsizeof(fp) // 16) * 16
                                             for fp in self.fps)


class Timed:
    """Wraps a seen set; adds the seconds spent in its batch calls to ``seconds``."""

    def __init__(self, seen: SeenSet | PythonSeen) -> None:
        self.seen, self.seconds = seen, 0.0

    def __getattr__(self, name: str) -> object:
        return getattr(self.seen, name)

    def __len__(self) -> int:
        return len(self.seen)

    def contains_batch(self, fps: np.ndarray | list[int]) -> np.ndarray:
        t = time.perf_counter()
        found = self.seen.contains_batch(fps)
        self.seconds += time.perf_counter() - t
        return found

    def add_batch(self, fps: np.ndarray | list[int]) -> object:
        t = time.perf_counter()
        new = self.seen.add_batch(fps)
        self.seconds += time.perf_counter() - t
        return new


def mix(i: np.ndarray) -> np.ndarray:
    """splitmix64 of each number: uniform 64-bit values (uint64)."""
    z = i.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def stream(n: int, batch: int, seed: int = 1):
    """The URL numbers of each superstep's links: ``batch / 5`` new, the rest repeats."""
    rng = np.random.default_rng(seed)
    new = max(1, batch // MET)
    for start in range(0, n, new):
        stop = min(n, start + new)
        fresh = np.arange(start, stop)
        again = rng.integers(0, stop, (MET - 1) * len(fresh))
        yield np.concatenate([fresh, again])[rng.permutation(MET * len(fresh))]


def host_of(i: np.ndarray, hosts: int) -> np.ndarray:
    """Host of each URL number: log-uniform, so host h gets a share ~1/h (Zipf, s = 1)."""
    u = mix(i ^ 0x5555).astype(np.float64) / 2.0**64
    return np.minimum(hosts ** u, hosts).astype(np.int64) - 1


def make_seen(kind: str) -> SeenSet | PythonSeen:
    return SeenSet() if kind == "array" else PythonSeen()


def run_seen(n: int, kind: str, batch: int) -> dict:
    """The seen set alone, fed the stream's fingerprints."""
    seen = Timed(make_seen(kind))
    links = 0
    for numbers in stream(n, batch):
        fps = mix(numbers).view(np.int64)
        known = seen.contains_batch(fps)
        seen.add_batch(fps[~known])
        links += len(numbers)
    assert len(seen) == n
    return {"links": links, "seen_s": seen.seconds, "seen_bytes": seen.ram_bytes,
            **timed_checkpoint(lambda: {"seen": seen.to_array()})}


def run_frontier(n: int, hosts: int, kind: str, batch: int) -> dict:
    """A real frontier: receive, schedule and commit half, checkpoint."""
    settings = Settings(politeness_min_host_delay=0.0, politeness_response_factor=0.0,
                        crawl_max_host_pages=0, crawl_max_domain_pages=0,
                        queue_batch=4096).validate()
    f = Frontier(settings)
    f.seen = seen = Timed(make_seen(kind))
    links = committed = seq = 0
    receive_s = schedule_s = 0.0
    for numbers in stream(n, batch):
        t = time.perf_counter()
        f.receive([Link(f"http://h{h}.example/p/{i}", 1) for i, h in
                   zip(numbers.tolist(), host_of(numbers, hosts).tolist(), strict=True)])
        t1 = time.perf_counter()
        links += len(numbers)
        while committed < int(numbers.max(initial=0) + 1) // 2:
            jobs = f.next_jobs(seq)
            seq += 1
            for job in jobs:
                committed += f.done(FetchResult(job, status=404 if job.robotstxt else 200))
            if not jobs:
                break
        schedule_s += time.perf_counter() - t1
        receive_s += t1 - t
    assert len(seen) == n and f.stats["frontier/new"] == n
    return {"links": links, "seen_s": seen.seconds, "receive_s": receive_s,
            "schedule_s": schedule_s, "seen_bytes": seen.ram_bytes, "waiting": len(f),
            "committed": committed, "hosts_known": len(f.hosts),
            **timed_checkpoint(lambda: f.snapshot([]))}


def timed_checkpoint(snapshot: Callable[[], dict[str, np.ndarray]]) -> dict:
    """Seconds to take the snapshot and write it as a checkpoint rank file, and its bytes."""
    before = peak_rss()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        checkpoint.write(Path(tmp), 0, 1, snapshot(), {"next_seq": 0})
        seconds = time.perf_counter() - t
        size = checkpoint.rank_file(Path(tmp), 0, 1).stat().st_size
    return {"checkpoint_s": seconds, "checkpoint_bytes": size, "peak_rss_crawl": before}


def peak_rss() -> int:
    """This process's peak RSS so far, bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(args: argparse.Namespace) -> None:
    """One run in this process: print its row as JSON."""
    n, hosts = args.child, args.hosts or max(1, args.child // 100)
    t = time.perf_counter()
    if args.mode == "seen":
        row = run_seen(n, args.seen, args.batch)
    else:
        row = run_frontier(n, hosts, args.seen, args.batch)
    row.update(mode=args.mode, seen=args.seen, urls=n, hosts=hosts, batch=args.batch,
               wall_s=time.perf_counter() - t,
               peak_rss=peak_rss())
    print(json.dumps(row))


def spawn(n: int, args: argparse.Namespace, kind: str) -> dict:
    cmd = [sys.executable, __file__, "--child", str(n), "--mode", args.mode, "--seen", kind,
           "--batch", str(args.batch)]
    if args.hosts:
        cmd += ["--hosts", str(args.hosts)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--urls", type=int, nargs="+", default=[1_000_000], help="N values")
    p.add_argument("--hosts", type=int, default=0, help="H (default N / 100)")
    p.add_argument("--mode", choices=["frontier", "seen"], default="frontier")
    p.add_argument("--seen", choices=["array", "python", "both"], default="both")
    p.add_argument("--batch", type=int, default=50_000, help="links per superstep")
    p.add_argument("--out", type=Path, default=Path("results/bench_scale.json"))
    p.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    kinds = ["array", "python"] if args.seen == "both" else [args.seen]
    rows = []
    for kind in kinds:
        base = spawn(BASELINE, args, kind)
        for n in args.urls:
            row = spawn(n, args, kind)
            row["bytes_per_url"] = (row["peak_rss_crawl"] - base["peak_rss_crawl"]) / n
            row["bytes_per_url_checkpoint"] = (row["peak_rss"] - base["peak_rss"]) / n
            rows.append(row)
            print(f"{kind} N={n:,}: {row['wall_s']:.0f} s", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1))
    print(f"\nmode {args.mode}, {args.batch:,} links per superstep, each URL met {MET} times\n")
    print("| seen set | N | hosts | peak RSS MB | RSS B/URL | with checkpoint | seen set "
          "B/URL | seen test M links/s | checkpoint s | checkpoint MB | wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['seen']} | {r['urls']:,} | {r['hosts']:,} "
              f"| {r['peak_rss_crawl'] / 1e6:,.0f} | {r['bytes_per_url']:.1f} "
              f"| {r['bytes_per_url_checkpoint']:.1f} | {r['seen_bytes'] / r['urls']:.1f} "
              f"| {r['links'] / r['seen_s'] / 1e6:.2f} | {r['checkpoint_s']:.2f} "
              f"| {r['checkpoint_bytes'] / 1e6:.0f} | {r['wall_s']:.0f} |")


if __name__ == "__main__":
    main()

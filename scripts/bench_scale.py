"""One rank's memory and speed as the crawl grows: frontier, seen set and host state.

A synthetic link stream, no network and no parsing: ``N`` unique URLs
(``http://h{host}.example/p/{i}``) over ``H`` hosts of Zipf-like sizes (host ``h`` gets a
share ~1/h), each URL met about 5 times. Each superstep receives ``--batch`` links: a fifth
are URLs met for the first time, the rest repeats of URLs met before (uniformly). After
each superstep the rank schedules and commits (``next_jobs`` + ``done``, robots.txt answered
404, pages 200) until half the URLs met are committed, so half are still waiting at the end.

Every ``N`` runs in a fresh process (peak RSS is per process), in one of two modes:

- ``frontier``: a real :class:`~bspcrawl.frontier.Frontier` (seen set, backlog and CBT,
  host state, budgets; its backlog and journal in a temporary directory); then a full
  checkpoint of it as ``superstep.py`` writes it (``state`` + ``checkpoint.write``);
  then ``--more`` (default ``N / 10``) more new URLs, received, scheduled and committed the
  same way, and an incremental checkpoint on top of the full one; then a resume from it
  in the same process (``checkpoint.read`` of the chain + a new frontier's ``restore``);
- ``seen``: the seen set alone, fed the stream's fingerprints (a 64-bit mix of the URL's
  number, uniform like xxh3's), the unseen ones added as ``Frontier.receive`` does;
  then a checkpoint of its array alone.

and with either seen set: ``array`` (``bspcrawl.seen.SeenSet``) or ``python`` (the
``set[int]`` of before, for the side-by-side ratio). Reported per run: peak RSS; bytes per
unique URL (peak RSS less that of the same run at ``N`` = 1000, over ``N``); the seen
set's own bytes per URL (its arrays; for ``python`` the set and its int objects); links per
second through the seen test alone (``contains_batch`` + ``add_batch``, timed apart from
the rest); checkpoint time and size; in frontier mode, the incremental checkpoint's time
and size and the resume's time. Writes results/bench_scale.json and prints a table.

    python scripts/bench_scale.py --urls 1000000 10000000
    python scripts/bench_scale.py --urls 10000000 100000000 --mode seen --seen array
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bspcrawl import checkpoint
from bspcrawl.frontier import Frontier, FrontierState
from bspcrawl.messages import FetchResult, Link
from bspcrawl.partition import Directory
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


def stream(n: int, batch: int, seed: int = 1) -> Iterator[np.ndarray]:
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
    with tempfile.TemporaryDirectory() as tmp:
        return {"links": links, "seen_s": seen.seconds, "seen_bytes": seen.ram_bytes,
                **timed_checkpoint(lambda: SeenOnly(seen.to_array()), Path(tmp), 1)}


@dataclass
class SeenOnly:
    """A checkpoint of the seen set alone."""

    seen: np.ndarray


def run_frontier(n: int, hosts: int, kind: str, batch: int, more: int, tmp: Path) -> dict:
    """A real frontier: receive, schedule and commit half; a full checkpoint; ``more``
    URLs; an incremental checkpoint; a resume from it."""
    settings = Settings(politeness_min_host_delay=0.0, politeness_response_factor=0.0,
                        crawl_max_host_pages=0, crawl_max_domain_pages=0,
                        queue_batch=4096).validate()
    f = Frontier(settings, backlog_dir=checkpoint.frontier_dir(tmp, 0))
    f.seen = f.intake.seen = seen = Timed(make_seen(kind))
    t = {"receive": 0.0, "schedule": 0.0, "links": 0, "committed": 0, "seq": 0}

    def superstep(numbers: np.ndarray) -> None:
        t0 = time.perf_counter()
        f.receive([Link(f"http://h{h}.example/p/{i}", 1) for i, h in
                   zip(numbers.tolist(), host_of(numbers, hosts).tolist(), strict=True)])
        t1 = time.perf_counter()
        t["links"] += len(numbers)
        while t["committed"] < int(numbers.max(initial=0) + 1) // 2:
            jobs = f.next_jobs(t["seq"])
            t["seq"] += 1
            for job in jobs:
                t["committed"] += f.done(FetchResult(job, status=404 if job.robotstxt
                                                     else 200))
            if not jobs:
                break
        t["schedule"] += time.perf_counter() - t1
        t["receive"] += t1 - t0

    batches = stream(n + more, batch)
    for numbers in itertools.islice(batches, -(-n // max(1, batch // MET))):
        superstep(numbers)
    assert len(seen) == n and f.stats["frontier/new"] == n
    row = {"links": t["links"], "seen_s": seen.seconds, "receive_s": t["receive"],
           "schedule_s": t["schedule"], "seen_bytes": seen.ram_bytes, "waiting": len(f),
           "committed": t["committed"], "hosts_known": len(f.hosts.hosts),
           **timed_checkpoint(lambda: rank_state(f.state([])), tmp, 1)}
    if not more:
        return row
    for numbers in batches:
        superstep(numbers)
    assert len(seen) == n + more
    incremental = timed_checkpoint(lambda: rank_state(f.state([], full=False)), tmp, 2,
                                   base=1)
    t0 = time.perf_counter()
    state, _ = checkpoint.read(tmp, 0, 2)
    g = Frontier(settings, backlog_dir=checkpoint.frontier_dir(tmp, 0))
    g.restore([state.frontier], lambda key: True)
    resume_s = time.perf_counter() - t0
    assert len(g.seen) == n + more and len(g) == len(f)
    return {**row, "more": more, "incr_checkpoint_s": incremental["checkpoint_s"],
            "incr_checkpoint_bytes": incremental["checkpoint_bytes"], "resume_s": resume_s}


def rank_state(frontier: FrontierState) -> checkpoint.RankState:
    """A rank file's state of one rank with nothing in transit."""
    return checkpoint.RankState.of(frontier, Directory(1).state(), [], [])


def timed_checkpoint(snapshot: Callable[[], checkpoint.RankState | SeenOnly], out: Path,
                     superstep: int, base: int | None = None) -> dict:
    """Seconds to take the snapshot and write it as checkpoint ``superstep`` (of ``base``),
    and its bytes: the rank file's and the backlog and journal bytes written for it."""
    before = peak_rss()
    disk = disk_bytes(out)
    t = time.perf_counter()
    checkpoint.write(out, 0, superstep, snapshot(),
                     {"next_seq": 0, "base": superstep if base is None else base})
    seconds = time.perf_counter() - t
    return {"checkpoint_s": seconds, "checkpoint_bytes": disk_bytes(out) - disk,
            "peak_rss_crawl": before}


def disk_bytes(out: Path) -> int:
    """Bytes of every file under ``out``."""
    return sum(p.stat().st_size for p in out.rglob("*") if p.is_file())


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
        more = n // 10 if args.more < 0 else args.more
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            row = run_frontier(n, hosts, args.seen, args.batch, more, Path(tmp))
    row.update(mode=args.mode, seen=args.seen, urls=n, hosts=hosts, batch=args.batch,
               wall_s=time.perf_counter() - t,
               peak_rss=peak_rss())
    print(json.dumps(row))


def spawn(n: int, args: argparse.Namespace, kind: str) -> dict:
    cmd = [sys.executable, __file__, "--child", str(n), "--mode", args.mode, "--seen", kind,
           "--batch", str(args.batch), "--more", str(0 if n == BASELINE else args.more)]
    if args.tmp:
        cmd += ["--tmp", args.tmp]
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
    p.add_argument("--more", type=int, default=-1, help="URLs after the full checkpoint, "
                   "before the incremental one (default N / 10; frontier mode)")
    p.add_argument("--tmp", default=None, help="directory for the backlog and checkpoints "
                   "(default: the system's temporary directory)")
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
    for a, b in itertools.pairwise(rows):
        if a["seen"] == b["seen"] and b["urls"] > a["urls"]:
            growth = (b["peak_rss_crawl"] - a["peak_rss_crawl"]) / (b["urls"] - a["urls"])
            print(f"\n{a['seen']}: peak RSS grows by {growth:.1f} B per unique URL from N = "
                  f"{a['urls']:,} to {b['urls']:,}")
    more = [r for r in rows if r.get("more")]
    if more:
        print("\n| seen set | N | then more URLs | incremental checkpoint s | its MB "
              "| resume s |")
        print("| --- | --- | --- | --- | --- | --- |")
        for r in more:
            print(f"| {r['seen']} | {r['urls']:,} | {r['more']:,} "
                  f"| {r['incr_checkpoint_s']:.2f} | {r['incr_checkpoint_bytes'] / 1e6:.0f} "
                  f"| {r['resume_s']:.2f} |")


if __name__ == "__main__":
    main()

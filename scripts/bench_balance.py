"""Load balance of the host directory (``bspcrawl/partition.py``), computed from a testweb's
ground truth: the pages each rank would fetch if hosts were dealt (the first ``--deal``
hosts, then hashed) against ``hash % P`` alone.

For each port (a port changes every host key, so its hash), the truth's pages are counted
per host; the seeds' hosts are dealt first, as a crawl does, then the others in one batch
(sorted by host hash, as :meth:`Directory.assign` deals them); balance = mean / max pages
per rank. No crawl is run: the owners are the directory's.

    python scripts/bench_balance.py --pages 20000 --hosts 1000 --ranks 8 --site-skew 0.3
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter

import numpy as np

from bspcrawl.partition import Directory, host_pair
from bspcrawl.urls import host_hash, host_key


def truth(args: argparse.Namespace, port: int, kind: str) -> list[str]:
    """The testweb's seeds (``kind`` "seeds") or truth, from its CLI."""
    cmd = [sys.executable, "-m", "bspcrawl", "testweb", kind, "--pages", str(args.pages),
           "--hosts", str(args.hosts), "--port", str(port), "--site-skew",
           str(args.site_skew)]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()


def balance(per_host: Counter, seeds: list[str], ranks: int, deal: int) -> float:
    """mean / max pages per rank with a directory dealing ``deal`` hosts (0: hash only)."""
    d = Directory(ranks, deal=deal)
    d.assign(host_pair(host_key(u)) for u in seeds)
    d.assign(host_pair(k) for k in per_host)
    load = np.zeros(ranks)
    for key, n in per_host.items():
        load[d.owner_of(host_hash(key))] += n
    return float(load.mean() / load.max())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, default=20_000)
    p.add_argument("--hosts", type=int, default=1000)
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--site-skew", type=float, default=0.3, help="as scripts/speedup.py's")
    p.add_argument("--ports", type=int, nargs="+", default=[8765, 8766, 8767, 8768])
    p.add_argument("--deal", type=int, nargs="+", default=[1 << 16, 0],
                   help="hosts dealt before hashing (0: hash % P only)")
    args = p.parse_args()
    print(f"{args.pages:,} pages, {args.hosts:,} hosts, site skew {args.site_skew}, "
          f"P = {args.ranks}\n")
    print("| deal | " + " | ".join(f"port {port}" for port in args.ports) + " |")
    print("| --- |" + " --- |" * len(args.ports))
    webs = []
    for port in args.ports:
        urls = truth(args, port, "truth")
        webs.append((Counter(host_key(u) for u in urls), truth(args, port, "seeds")))
    for deal in args.deal:
        cells = [f"{balance(per_host, seeds, args.ranks, deal):.3f}"
                 for per_host, seeds in webs]
        print(f"| {deal:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

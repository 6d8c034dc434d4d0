"""Pages/s of whole crawls of the local web with P = 1, 2, ... ranks, side by side.

Serves a testweb in its own process, then crawls it with each P in turn (``--repeat`` times,
interleaved, so that load from elsewhere on a shared machine hits every P alike), and
reports wall time, pages/s, CPU-seconds of the crawl's processes (user + sys of mpiexec's
children) and pages per CPU-second; the server's CPU is reported apart. Writes
``results/bench_crawl.json`` and prints a markdown table.

    python scripts/bench_crawl.py --pages 10000 --hosts 100 --ranks 1 2 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cpu import children_cpu

from bspcrawl.testweb import Web, WebConfig, free_port

PY = sys.executable
MPIEXEC = str(Path(PY).parent / "mpiexec")


def crawl_once(ranks: int, seeds: Path, out: Path, extra: list[str]) -> dict:
    """One crawl; returns wall time, CPU time and the inspect summary."""
    cmd = [PY, "-m", "bspcrawl", "run", "--seeds", str(seeds), "--out", str(out),
           "--overwrite", "--min-host-delay", "0", "--response-factor", "0",
           "--allow-net", "127.0.0.0/8",
           "--progress", "none", *extra]
    if ranks > 1:
        cmd = [MPIEXEC, "-n", str(ranks), PY, "-m", "mpi4py", *cmd[1:]]
    cpu0, t0 = children_cpu(), time.monotonic()
    subprocess.run(cmd, check=True, capture_output=True)
    wall, cpu = time.monotonic() - t0, children_cpu() - cpu0
    info = json.loads(subprocess.run([PY, "-m", "bspcrawl", "inspect", str(out), "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    return {"ranks": ranks, "wall_s": wall, "cpu_s": cpu, "pages": info["pages_fetched"],
            "crawl_wall_s": info["wall_s"], "supersteps": info["supersteps"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, default=10000)
    p.add_argument("--hosts", type=int, default=100)
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", type=Path, default=Path("results/bench_crawl.json"))
    p.add_argument("extra", nargs="*", help="options passed to bspcrawl run (after --)")
    args = p.parse_args()
    config = WebConfig(pages=args.pages, hosts=args.hosts, port=free_port(args.hosts))
    web = Web(config)
    tmp = Path(tempfile.mkdtemp(prefix="bench_crawl-"))
    seeds = tmp / "seeds.txt"
    seeds.write_text("\n".join(web.seeds()) + "\n")
    server = subprocess.Popen([PY, "-m", "bspcrawl", "testweb", "serve", "--pages",
                               str(args.pages), "--hosts", str(args.hosts), "--port",
                               str(config.port)], stdout=subprocess.PIPE, text=True)
    server.stdout.readline()
    runs = []
    try:
        for rep in range(args.repeat):
            for ranks in args.ranks:
                run = crawl_once(ranks, seeds, tmp / f"out-{ranks}", args.extra)
                run["repeat"] = rep
                runs.append(run)
                print(f"P={ranks} run {rep}: {run['pages']} pages in {run['wall_s']:.2f} s, "
                      f"{run['cpu_s']:.2f} CPU-s", file=sys.stderr)
    finally:
        server.terminate()
        server.wait()
        server_cpu = children_cpu() - sum(r["cpu_s"] for r in runs)
        shutil.rmtree(tmp)
    rows = []
    for ranks in args.ranks:
        mine = [r for r in runs if r["ranks"] == ranks]
        wall = statistics.median(r["wall_s"] for r in mine)
        cpu = statistics.median(r["cpu_s"] for r in mine)
        pages = mine[0]["pages"]
        rows.append({"ranks": ranks, "pages": pages, "wall_s": wall, "pages_per_s": pages / wall,
                     "cpu_s": cpu, "pages_per_cpu_s": pages / cpu,
                     "supersteps": mine[0]["supersteps"]})
    base = rows[0]["pages_per_s"]
    result = {"pages": args.pages, "hosts": args.hosts, "repeat": args.repeat,
              "server_cpu_s": server_cpu, "cores": os.cpu_count(), "rows": rows, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"\n{args.pages}-page testweb on {args.hosts} hosts, median of {args.repeat} "
          f"interleaved runs, {os.cpu_count()} cores (server in its own process: "
          f"{server_cpu:.1f} CPU-s in all)\n")
    print("| P | pages | wall s | pages/s | vs P=1 | crawl CPU-s | pages/CPU-s | supersteps |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['ranks']} | {r['pages']} | {r['wall_s']:.2f} | {r['pages_per_s']:.0f} | "
              f"{r['pages_per_s'] / base:.2f} | {r['cpu_s']:.2f} | {r['pages_per_cpu_s']:.0f} | "
              f"{r['supersteps']} |")


if __name__ == "__main__":
    main()

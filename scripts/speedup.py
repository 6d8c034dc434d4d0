"""Speedup and efficiency of bspcrawl with P ranks: the experiment a reader of Marin et al.
(2008) runs first.

Serves one local web in its own process and crawls it with P = 1, 2, 4, 8 ranks of r = 8
fetch workers each (more ranks, more workers: the scaling the paper claims), on a latency-bound web
(every response delayed ``--latency-ms``, default 100 ms) and, for P = 1, 2, on the same web
without latency (the CPU-bound case). For each crawl: wall time, pages/s, speedup
S(P) = T(1)/T(P), efficiency E(P) = S(P)/P, the paper's load-balance efficiency (mean pages
per rank / max pages per rank) and the URLs exchanged per superstep. Writes
results/speedup.h5, results/speedup.png and results/speedup.md, and prints the table.

The web has many mid-sized sites (``--site-skew`` flattens testweb's Zipf site sizes) of
small pages (``--min-kb``/``--max-kb``), so that on a small machine the crawl stays bound by
latency, not by the CPU, up to P = 8: with one request at a time per host, one huge site
would bound any crawl's time by its own size x latency whatever P is.

    python scripts/speedup.py                      # 20,000 pages, 1,000 hosts, 100 ms
    python scripts/speedup.py -- --no-warc         # options after -- go to bspcrawl run
    python scripts/speedup.py --pages 4000 --hosts 200 --ranks 1 2 4   # quicker
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np
from cpu import children_cpu
from crawlers import compile_bspcrawl

from bspcrawl.testweb import Web, WebConfig, free_port

PY = sys.executable
MPIEXEC = str(Path(PY).parent / "mpiexec")


def serve(config: WebConfig, latency_ms: float) -> subprocess.Popen:
    """Start ``bspcrawl testweb serve`` for ``config`` and wait until it listens."""
    cmd = [PY, "-m", "bspcrawl", "testweb", "serve", "--seed", str(config.seed), "--pages",
           str(config.pages), "--hosts", str(config.hosts), "--port", str(config.port),
           "--min-kb", str(config.min_kb), "--max-kb", str(config.max_kb),
           "--site-skew", str(config.site_skew), "--latency-ms", str(latency_ms)]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    server.stdout.readline()
    return server


def crawl(ranks: int, workers: int, seeds: Path, out: Path, extra: list[str]) -> dict:
    """One crawl; its wall time, CPU time and what its crawl.h5 says about balance and
    exchange."""
    cmd = [PY, "-m", "bspcrawl", "run", "--seeds", str(seeds), "--out", str(out),
           "--overwrite", "--min-host-delay", "0", "--response-factor", "0",
           "--allow-net", "127.0.0.0/8", "--workers", str(workers), "--progress", "none",
           "--checkpoint-every", "0", *extra]
    if ranks > 1:
        cmd = [MPIEXEC, "-n", str(ranks), PY, "-m", "mpi4py", *cmd[1:]]
    t0, cpu0 = time.monotonic(), children_cpu()
    subprocess.run(cmd, check=True, capture_output=True)
    wall, cpu = time.monotonic() - t0, children_cpu() - cpu0
    with h5py.File(out / "crawl.h5") as f:
        per_rank = np.bincount(f["pages/rank"][:], minlength=ranks)
        stats = f["stats"][:]
        supersteps = int(f.attrs["supersteps"])
    urls_out = int(stats["exchange/urls_remote"].sum())  # links sent to another rank
    return {"ranks": ranks, "wall_s": wall, "cpu_s": cpu, "pages": int(per_rank.sum()),
            "pages_per_rank": per_rank.tolist(),
            "balance": float(per_rank.mean() / per_rank.max()),
            "supersteps": supersteps, "urls_per_superstep": urls_out / max(supersteps, 1)}


def table(rows: list[dict]) -> str:
    """The markdown table of one regime's crawls."""
    t1 = rows[0]["wall_s"]
    lines = ["| P | workers | pages | wall s | pages/s | S(P) | E(P) | balance | "
             "URLs exchanged / superstep | crawl CPU-s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        s = t1 / r["wall_s"]
        r.update(speedup=s, efficiency=s / r["ranks"])
        lines.append(f"| {r['ranks']} | {r['workers']} | {r['pages']} | {r['wall_s']:.1f} | "
                     f"{r['pages'] / r['wall_s']:.0f} | {s:.2f} | {s / r['ranks']:.2f} | "
                     f"{r['balance']:.2f} | {r['urls_per_superstep']:.0f} | "
                     f"{r['cpu_s']:.0f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, default=20000)
    p.add_argument("--hosts", type=int, default=1000)
    p.add_argument("--min-kb", type=int, default=4)
    p.add_argument("--max-kb", type=int, default=12)
    p.add_argument("--site-skew", type=float, default=0.3)
    p.add_argument("--latency-ms", type=float, default=100.0)
    p.add_argument("--workers", type=int, default=8, help="fetch workers per rank")
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--cpu-ranks", type=int, nargs="*", default=[1, 2],
                   help="P of the crawls without latency (none: skip them)")
    p.add_argument("--out", type=Path, default=Path("results"))
    p.add_argument("extra", nargs="*", help="options passed to bspcrawl run (after --)")
    args = p.parse_args()
    config = WebConfig(pages=args.pages, hosts=args.hosts, min_kb=args.min_kb,
                       max_kb=args.max_kb, site_skew=args.site_skew,
                       port=free_port(args.hosts))
    web = Web(config)
    compile_bspcrawl()
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        seeds = Path(tmp) / "seeds.txt"
        seeds.write_text("\n".join(web.seeds()) + "\n")
        for regime, latency, ranks in (("latency", args.latency_ms, args.ranks),
                                       ("cpu", 0.0, args.cpu_ranks)):
            if not ranks:
                continue
            server = serve(config, latency)
            try:
                rows = []
                for P in ranks:
                    row = crawl(P, args.workers, seeds, Path(tmp) / f"{regime}-{P}", args.extra)
                    row.update(workers=args.workers, latency_ms=latency)
                    rows.append(row)
                    print(f"{regime}: P={P} {row['pages']} pages in {row['wall_s']:.1f} s",
                          file=sys.stderr)
                results[regime] = rows
            finally:
                server.terminate()
                server.wait()
    args.out.mkdir(parents=True, exist_ok=True)
    text = [f"Local web: {args.pages} pages ({args.min_kb}-{args.max_kb} KB) on {args.hosts} "
            f"hosts, site skew {args.site_skew}, {args.workers} fetch workers per rank"
            f"{', options ' + ' '.join(args.extra) if args.extra else ''}.\n"]
    for regime, rows in results.items():
        head = (f"Latency-bound ({args.latency_ms:.0f} ms per response)" if regime == "latency"
                else "CPU-bound (no latency)")
        text += [f"\n{head}:\n", table(rows), ""]
    report = "\n".join(text)
    print(report)
    (args.out / "speedup.md").write_text(report + "\n")
    with h5py.File(args.out / "speedup.h5", "w") as f:
        f.attrs["config"] = json.dumps(vars(args), default=str)
        for regime, rows in results.items():
            for key in ("ranks", "wall_s", "cpu_s", "pages", "speedup", "efficiency",
                        "balance", "urls_per_superstep"):
                f[f"{regime}/{key}"] = np.array([r[key] for r in rows])
    plot(results, args.out / "speedup.png")


def plot(results: dict[str, list[dict]], path: Path) -> None:
    """Speedup and efficiency against P (skipped without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    for regime, rows in results.items():
        ps = [r["ranks"] for r in rows]
        a.plot(ps, [r["speedup"] for r in rows], "o-", label=regime)
        b.plot(ps, [r["efficiency"] for r in rows], "o-", label=regime)
    top = max(r["ranks"] for rows in results.values() for r in rows)
    a.plot([1, top], [1, top], ":", color="grey", label="ideal")
    a.set(xlabel="P (ranks)", ylabel="S(P)", title="speedup")
    b.set(xlabel="P (ranks)", ylabel="E(P)", title="efficiency", ylim=(0, 1.1))
    a.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()

"""Pages/s and CPU per page of bspcrawl (P = 1, 2), Scrapy and ``wget -r`` on one local web.

Serves a testweb (default 20,000 pages on 200 hosts) from a child process with every page
rendered before the first request (a full cache: the server only parses requests and
copies bytes), then crawls it with each crawler in turn, ``--repeat`` times, interleaved,
and reports medians. A warm-up crawl (``--warmup``, bspcrawl P = 1 ``--no-warc``, not
counted) goes first: the first crawl of a fresh server measured up to 25% more crawler CPU
than the ones after it (bspcrawl 44.8 then 35.9 CPU-s; Scrapy, later in the order, did not
show it). The crawlers and their settings are those of ``crawlers.py`` (every one from
the same seeds, robots.txt obeyed, on the web's hosts, no delay, no depth limit, one
connection per host): bspcrawl P = 1 with its WARC archive (the default) and with
``--no-warc`` (``bspcrawl-1-nowarc``: the same job as Scrapy's: fetch, parse, count words),
bspcrawl P = 2, Scrapy and ``wget -r``, and bspcrawl P = 1 and 2 without parse helpers
(``bspcrawl-P-h0``: ``--parse-processes 0``; the defaults give a rank two where a core is
spare for each rank, docs/architecture.md; ``-h1`` rows on demand).

Scrapy fetches each seed twice (start requests bypass its duplicate filter) and resolves
links against a ``<base href>`` without decoding ``&amp;``: both show in the counts.

Pages are counted by the server: every request but /robots.txt answered during a crawl
(200, 3xx and 404), from its request log. CPU is user + sys of all of a crawler's processes
(``RUSAGE_CHILDREN``: mpiexec, its proxies and ranks); the server's CPU is read from /proc
and reported apart. Writes ``results/bench_throughput.{md,json}``.

    python scripts/bench_throughput.py            # 20,000 pages, 200 hosts, 3 repeats
    python scripts/bench_throughput.py --quick    # ~2,000 pages, 20 hosts, 1 repeat
    python scripts/bench_throughput.py --profile  # also a cProfile of a P=1 crawl
"""

from __future__ import annotations

import argparse
import collections
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cpu import process_cpu, timed
from crawlers import (
    CONCURRENCY,
    PY,
    RESULTS,
    bspcrawl_command,
    check_exit,
    compile_bspcrawl,
    own_figures,
    scrapy_command,
    scrapy_python,
    seed_page,
    source_digest,
    source_note,
    wget_command,
    wget_version,
    write_results,
)

from bspcrawl.testweb import Web, WebConfig, free_port, serve_forever

CRAWLERS = ["bspcrawl-1", "bspcrawl-1-nowarc", "bspcrawl-2", "scrapy", "wget",
            "bspcrawl-1-h0", "bspcrawl-2-h0", "bspcrawl-1-h1", "bspcrawl-2-h1"]
DEFAULT = CRAWLERS[:7]  # the crawlers run unless --crawlers names others
# bspcrawl-P: P ranks with the defaults (--parse-processes -1, docs/architecture.md); -nowarc:
# with --no-warc; -hN: N parse helpers a rank


def serve(config: WebConfig, log: Path) -> None:
    """The server process: the testweb with every page rendered up front, logging requests."""
    web = Web(config, cache=config.pages + 1)
    for page in range(web.n_pages):
        web.html(page)
    serve_forever(web, log=log, announce=lambda line: print(line, flush=True))


def commands(seeds: Path, netlocs: list[str], tmp: Path, scrapy: Path) -> dict[str, list[str]]:
    """The command line of each crawler (run with the working directory ``tmp``)."""
    return {
        "bspcrawl-1": bspcrawl_command(seeds, tmp / "out-1"),
        "bspcrawl-1-nowarc": bspcrawl_command(seeds, tmp / "out-1n", 1, "--no-warc"),
        "bspcrawl-2": bspcrawl_command(seeds, tmp / "out-2", 2),
        **{f"bspcrawl-{p}-h{n}": bspcrawl_command(seeds, tmp / f"out-{p}-h{n}", p,
                                                  "--parse-processes", str(n))
           for p in (1, 2) for n in (0, 1)},
        "scrapy": scrapy_command(scrapy, seeds, netlocs, tmp),
        "wget": wget_command(seed_page(seeds.read_text().split(), tmp), netlocs, tmp),
    }


def requests_after(log: Path, offset: int) -> tuple[collections.Counter, list[str]]:
    """Requests the server logged after byte ``offset``: counts by status (robots.txt
    apart) and the URLs requested, robots.txt excluded, in order."""
    counts: collections.Counter = collections.Counter()
    urls = []
    with log.open("rb") as f:
        f.seek(offset)
        for line in f:
            netloc, target, _, _, status = line.decode().rstrip("\n").split("\t")
            if target == "/robots.txt":
                counts["robots"] += 1
            else:
                counts[status] += 1
                urls.append(f"http://{netloc}{target}")
    return counts, urls


def crawl(name: str, argv: list[str], tmp: Path, server: subprocess.Popen, log: Path,
          truth: set[str]) -> dict:
    """One crawl: wall time, crawler CPU, server CPU, the server's request counts, and the
    URLs fetched beyond ``truth`` (or more than once) and missed (a few examples)."""
    offset, server0 = log.stat().st_size, process_cpu(server.pid)
    done, wall, cpu = timed(argv, tmp)
    check_exit(name, done)
    time.sleep(0.3)  # the server logs a request just after its response
    counts, urls = requests_after(log, offset)
    fetched = set(urls)
    run = {"crawler": name, "wall_s": wall, "cpu_s": cpu, "pages": len(urls),
           "status": dict(sorted(counts.items())), "repeated": len(urls) - len(fetched),
           "extra": len(fetched - truth), "missed": len(truth - fetched),
           "extra_examples": sorted(fetched - truth)[:5],
           "missed_examples": sorted(truth - fetched)[:5],
           "twice_examples": [u for u, n in collections.Counter(urls).most_common(5) if n > 1],
           "server_cpu_s": process_cpu(server.pid) - server0}
    run.update(own_figures(name, argv, tmp))
    return run


def profile_p1(seeds: Path, tmp: Path, out: Path) -> None:
    """cProfile of a P=1 crawl; writes the top functions by own time and by cumulative time."""
    prof = tmp / "prof.out"
    subprocess.run([PY, "-m", "cProfile", "-o", str(prof), "-m", "bspcrawl", "run", "--seeds",
                    str(seeds), "--out", str(tmp / "out-prof"), "--overwrite",
                    "--min-host-delay", "0", "--response-factor", "0", "--allow-net",
                    "127.0.0.0/8", "--progress", "none"], check=True, capture_output=True)
    with out.open("w") as f:
        f.write("cProfile of a P=1 crawl: the main (scheduler) thread only, not the robots "
                f"thread; bspcrawl source {source_digest()}\n\n")
        stats = pstats.Stats(str(prof), stream=f).strip_dirs()
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(30)


def summarise(names: list[str], runs: list[dict]) -> list[dict]:
    """One row per crawler: medians of its runs, and pages per CPU-second against Scrapy's."""
    rows = []
    for name in names:
        mine = [r for r in runs if r["crawler"] == name]
        ranks = int(name.split("-")[1]) if name.startswith("bspcrawl") else 1
        row = {"crawler": name, "concurrency": 1 if name == "wget" else CONCURRENCY * ranks}
        for key in ("wall_s", "cpu_s", "pages", "server_cpu_s"):
            row[key] = statistics.median(r[key] for r in mine)
        for key in ("status", "repeated", "extra", "missed"):
            row[key] = mine[0][key]
        row["pages_per_s"] = row["pages"] / row["wall_s"]
        row["cpu_per_1000"] = 1000 * row["cpu_s"] / row["pages"]
        row["pages_per_cpu_s"] = row["pages"] / row["cpu_s"]
        rows.append(row)
    scrapy_rate = next((r["pages_per_cpu_s"] for r in rows if r["crawler"] == "scrapy"), 0)
    for row in rows:
        row["vs_scrapy"] = row["pages_per_cpu_s"] / scrapy_rate if scrapy_rate else None
    return rows


def table(rows: list[dict]) -> str:
    """The markdown table of the medians."""
    lines = ["| crawler | concurrency | pages | 200 / 3xx / 404 | robots.txt | vs truth: extra / "
             "missed / twice | wall s | pages/s | CPU-s | CPU-s per 1,000 pages | pages/CPU-s "
             "| vs Scrapy | server CPU-s |",
             "| --- | --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: "
             "| ---: |"]
    for r in rows:
        st = r["status"]
        redirects = sum(n for s, n in st.items() if s.startswith("3"))
        ratio = "-" if r["vs_scrapy"] is None else f"{r['vs_scrapy']:.2f}"
        lines.append(
            f"| {r['crawler']} | {r['concurrency']} | {r['pages']} | {st.get('200', 0)} / "
            f"{redirects} / {st.get('404', 0)} | {st.get('robots', 0)} | {r['extra']} / "
            f"{r['missed']} / {r['repeated']} | {r['wall_s']:.1f} | "
            f"{r['pages_per_s']:.0f} | {r['cpu_s']:.1f} | {r['cpu_per_1000']:.2f} | "
            f"{r['pages_per_cpu_s']:.0f} | {ratio} | {r['server_cpu_s']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, default=20000)
    p.add_argument("--hosts", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1, help="uncounted crawls first (default 1)")
    p.add_argument("--quick", action="store_true", help="2,000 pages on 20 hosts, 1 repeat")
    p.add_argument("--profile", action="store_true", help="also cProfile a P=1 crawl")
    p.add_argument("--crawlers", nargs="+", default=DEFAULT, choices=CRAWLERS)
    p.add_argument("--serve", type=Path, metavar="LOG", help=argparse.SUPPRESS)  # server child
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.quick:
        args.pages, args.hosts, args.repeat = 2000, 20, 1
    if args.serve:
        serve(WebConfig(pages=args.pages, hosts=args.hosts, port=args.port), args.serve)
        return
    config = WebConfig(pages=args.pages, hosts=args.hosts, port=free_port(args.hosts))
    web = Web(config)
    truth = set(web.truth(web.seeds()))
    scrapy, scrapy_version = scrapy_python()
    wget = wget_version()
    tmp = Path(tempfile.mkdtemp(prefix="bench_throughput-"))
    seeds, log = tmp / "seeds.txt", tmp / "requests.tsv"
    seeds.write_text("\n".join(web.seeds()) + "\n")
    log.touch()
    every = commands(seeds, web.netlocs, tmp, scrapy)
    cmds = {name: every[name] for name in args.crawlers}
    server = subprocess.Popen([PY, __file__, "--serve", str(log), "--pages", str(args.pages),
                               "--hosts", str(args.hosts), "--port", str(config.port)],
                              stdout=subprocess.PIPE, text=True)
    runs: list[dict] = []
    compile_bspcrawl()
    source = [source_digest()]
    try:
        if not server.stdout.readline():
            sys.exit("the testweb server did not start")
        for _ in range(args.warmup):
            crawl("bspcrawl-1-nowarc", every["bspcrawl-1-nowarc"], tmp, server, log, truth)
        for rep in range(args.repeat):
            for name, argv in cmds.items():
                run = dict(crawl(name, argv, tmp, server, log, truth), repeat=rep)
                runs.append(run)
                print(f"{name} run {rep}: {run['pages']} pages in {run['wall_s']:.1f} s, "
                      f"{run['cpu_s']:.1f} CPU-s (server {run['server_cpu_s']:.1f})",
                      file=sys.stderr)
        source.append(source_digest())
        if args.profile:
            profile_p1(seeds, tmp, RESULTS / "bench_throughput_profile.txt")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp)
    rows = summarise(list(cmds), runs)
    head = (f"{args.pages}-page testweb on {args.hosts} hosts (truth: {len(truth)} URLs), "
            f"median of {args.repeat} interleaved runs after {args.warmup} warm-up crawl(s), "
            f"{os.cpu_count()} cores shared with the "
            f"server. {scrapy_version}; {wget}. Pages: requests other than /robots.txt "
            f"the server answered during the crawl (extra: URLs not in the truth; twice: "
            f"requests of a URL already requested); CPU-s: user + sys of all the crawler's "
            f"processes; vs Scrapy: ratio of pages/CPU-s. {source_note(source)}")
    result = {"pages": args.pages, "hosts": args.hosts, "truth": len(truth), "repeat": args.repeat,
              "warmup": args.warmup,
              "cores": os.cpu_count(), "scrapy": scrapy_version, "wget": wget,
              "source": source, "rows": rows, "runs": runs}
    write_results("bench_throughput", f"{head}\n\n{table(rows)}\n", result)


if __name__ == "__main__":
    main()

"""A fuzzing campaign: crawls of hostile webs (``bspcrawl testweb hostile``) for successive
seeds, each audited, until enough hostile answers were served (issue 14).

Each crawl serves the hostile web of one seed in a child process with a request log, runs
``mpiexec -n RANKS python -m mpi4py -m bspcrawl run`` on it (the command line of
``tests/crawling.py``'s ``crawl()``, with the fuzz settings below) into a temporary
directory, and checks that the crawl exited 0 and that
:func:`bspcrawl.testweb.hostile.audit` finds nothing (no URL requested twice without cause,
never two requests in flight to one host, every ``*.h5`` readable, every WARC passing
``warcio check``, no fetcher thread replaced). It prints one line per crawl and a summary;
on the first failure it keeps that crawl's output, log and messages, says where, and exits 1.

    python scripts/fuzz_campaign.py                       # 100,000 answers (hours)
    python scripts/fuzz_campaign.py --responses 3000 --first-seed 7
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bspcrawl.index.inspect import summary
from bspcrawl.testweb.hostile import HostileConfig, audit, responses, serving

PY = sys.executable
MPIEXEC = str(Path(PY).parent / "mpiexec")
# the fuzz settings: unpaced (--min-host-delay 0 --response-factor 0), short timeouts and
# rests so that a crawl of a web that stalls and throttles ends in tens of seconds
SETTINGS = ["--min-host-delay", "0", "--response-factor", "0", "--allow-net", "127.0.0.0/8",
            "--fetch-timeout", "5", "--politeness-max-backoff", "2",
            "--window-straggler-timeout", "3", "--politeness-max-crawl-delay", "0.25",
            "--progress", "none"]


def crawl_once(config: HostileConfig, ranks: int, work: Path) -> tuple[list[str], dict]:
    """Serve and crawl one hostile web in ``work``; the problems found, and figures."""
    log, out = work / "requests.tsv", work / "out"
    seeds = work / "seeds.txt"
    seeds.write_text("".join(u + "\n" for u in config.seeds()))
    run = [PY, "-m", "bspcrawl", "run", "--seeds", str(seeds), "--out", str(out), *SETTINGS]
    if ranks > 1:
        run = [MPIEXEC, "-n", str(ranks), PY, "-m", "mpi4py", *run[1:]]
    env = {**os.environ, "MPIEXEC_TIMEOUT": "900", "PYTHONUNBUFFERED": "1"}
    t0 = time.monotonic()
    with serving(config, log):
        done = subprocess.run(run, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    (work / "crawl.stdout").write_text(done.stdout)
    (work / "crawl.stderr").write_text(done.stderr)
    problems = [] if done.returncode == 0 else [
        f"bspcrawl run exited {done.returncode}: "
        + " | ".join(done.stderr.strip().splitlines()[-5:])]
    problems += audit(log, out)
    pages = 0
    if (out / "crawl.h5").exists():
        info = summary(out)
        pages = info["pages_fetched"]
        if info["stopped"] != "done":
            problems.append(f"the crawl stopped by {info['stopped']!r}, not by itself")
    return problems, {"responses": responses(log) if log.exists() else 0, "pages": pages,
                      "wall": wall}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--responses", type=int, default=100_000,
                   help="stop once this many hostile answers were served (default: %(default)s)")
    p.add_argument("--first-seed", type=int, default=1, help="seed of the first web")
    p.add_argument("--hosts", type=int, default=20, help="hosts per web (default: %(default)s)")
    p.add_argument("--pages", type=int, default=40, help="pages per host (default: %(default)s)")
    p.add_argument("--ranks", type=int, default=2, help="MPI ranks (default: %(default)s)")
    p.add_argument("--keep", type=Path, default=Path("fuzz-failures"),
                   help="where a failing crawl's files are kept (default: %(default)s)")
    args = p.parse_args(argv)
    total = {"responses": 0, "pages": 0, "wall": 0.0}
    t0 = time.monotonic()
    print(f"{'seed':>6} {'responses':>9} {'pages':>7} {'wall s':>7} {'resp/s':>7}  problems",
          flush=True)
    crawls = 0
    for seed in itertools.count(args.first_seed):
        config = HostileConfig(seed=seed, hosts=args.hosts, pages=args.pages).on_free_port()
        work = Path(tempfile.mkdtemp(prefix=f"fuzz-{seed}-"))
        problems, got = crawl_once(config, args.ranks, work)
        crawls += 1
        for key in total:
            total[key] += got[key]
        print(f"{seed:>6} {got['responses']:>9} {got['pages']:>7} {got['wall']:>7.1f} "
              f"{got['responses'] / got['wall']:>7.1f}  {len(problems)}", flush=True)
        if problems:
            kept = args.keep / f"seed-{seed}"
            shutil.rmtree(kept, ignore_errors=True)
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(work, kept)
            for problem in problems[:20]:
                print(f"  {problem.replace(str(work), str(kept))}")
            if len(problems) > 20:
                print(f"  ... and {len(problems) - 20} more")
            print(f"seed {seed} failed: its output, request log and messages are in {kept}")
            return 1
        shutil.rmtree(work)
        if total["responses"] >= args.responses:
            break
    wall = time.monotonic() - t0
    print(f"{crawls} crawls, seeds {args.first_seed}..{args.first_seed + crawls - 1}: "
          f"{total['responses']} hostile answers, {total['pages']} pages, {wall:.0f} s "
          f"({total['responses'] / wall:.1f} answers/s), no problem")
    return 0


if __name__ == "__main__":
    sys.exit(main())

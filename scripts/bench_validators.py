"""Benchmark the ValidatorStore: memory per entry and the lookup of one schedule.

A store of ``--entries`` URLs (10^7 by default) is filled with realistic validators, then
one schedule of ``--lookups`` fingerprints (``--hit`` of them stored, the rest absent) is
looked up ``--rounds`` times; the median time is reported, with the keys' recent level
empty (right after a merge) and half full (its usual state in a crawl). Memory per entry
is reported twice: the arrays' ``nbytes`` (the columns' room to grow included, the ETags'
``str`` objects left out) and what tracemalloc saw allocated while the store was built
(numpy and CPython report their allocations to tracemalloc).

Validator mixes (``--mix``, all by default):

* ``http-archive``: the share of responses with validators measured by the HTTP Archive
  (Nov 2014 run: 43% ETag and Last-Modified, 4% ETag only, 30% Last-Modified only, 23%
  neither); 25% have an explicit freshness (max-age or Expires), an assumption. ETags as
  common servers make them: nginx ``"5e1f0a2b-4a3b"`` (40%), Apache
  ``"4a3b-5e1f0a2b3c4d5"`` (20%), weak ``W/"5e1f0a2b-4a3b"`` (20%), an MD5 (20%).
* ``all-nginx``: every entry has an nginx ETag, Last-Modified and a freshness (worst case
  for short ETags).
* ``all-md5``: every entry has a 34-character MD5 ETag, Last-Modified and a freshness.

Columns: ``B/entry`` the arrays' nbytes per entry, ``traced`` tracemalloc's current total
after the build, ``peak`` its peak during the build (a 10^6-row batch's temporaries
included); ``lookup ms`` median, min and 90th percentile of one schedule's lookup, with the
recent level empty and (``recent½``) half full; ``plan ms`` the whole of what the crawl does
per schedule (``bspcrawl.index.archive.Archive.plan``: the lookup, then If-None-Match /
If-Modified-Since header lines for the stored URLs that are not fresh and a result for each
fresh one), median and 90th percentile.

Run: ``.venv/bin/python scripts/bench_validators.py`` (about 3 minutes and 2 GB at 10^7);
writes ``results/bench_validators.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from bspcrawl.index.archive import Archive
from bspcrawl.index.validators import ValidatorStore
from bspcrawl.messages import FetchJob
from bspcrawl.sortedkeys import RECENT_MAX

EPOCH = 1_700_000_000
NOW = EPOCH + 60 * 86400  # when the schedules are planned: two months after the fetches
CHUNK = 1_000_000


def make_etags(rng: np.random.Generator, n: int, mix: str) -> list[str]:
    """``n`` ETags ('' none) of the mix's styles."""
    mtime = rng.integers(1_300_000_000, EPOCH, n)
    size = rng.integers(200, 1 << 20, n)
    micros = mtime * 1_000_000 + rng.integers(0, 1_000_000, n)
    if mix == "all-nginx":
        return [f'"{t:x}-{s:x}"' for t, s in zip(mtime.tolist(), size.tolist(), strict=True)]
    digest = rng.integers(0, 2**63, (n, 2))
    if mix == "all-md5":
        return [f'"{a:016x}{b:016x}"' for a, b in digest.tolist()]
    has = rng.random(n) < 0.47
    style = rng.random(n)
    out = [""] * n
    for i in np.flatnonzero(has).tolist():
        u = style[i]
        if u < 0.4:
            out[i] = f'"{mtime[i]:x}-{size[i]:x}"'
        elif u < 0.6:
            out[i] = f'"{size[i]:x}-{micros[i]:x}"'
        elif u < 0.8:
            out[i] = f'W/"{mtime[i]:x}-{size[i]:x}"'
        else:
            out[i] = f'"{digest[i, 0]:016x}{digest[i, 1]:016x}"'
    return out


Batch = tuple[np.ndarray, list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def batches(rng: np.random.Generator, fps: np.ndarray, mix: str) -> list[Batch]:
    """The update() arguments adding ``fps`` with validators of ``mix``, a million a call."""
    out = []
    for lo in range(0, len(fps), CHUNK):
        f = fps[lo:lo + CHUNK]
        n = len(f)
        etags = make_etags(rng, n, mix)
        if mix == "http-archive":
            has_etag = np.array([bool(e) for e in etags])
            lm_share = np.where(has_etag, 43 / 47, 30 / 53)  # P(LM | ETag), P(LM | no ETag)
            has_lm = rng.random(n) < lm_share
            has_exp = rng.random(n) < 0.25
        else:
            has_lm = has_exp = np.ones(n, bool)
        fetched = rng.integers(EPOCH, EPOCH + 86400 * 30, n)
        modified = np.where(has_lm, rng.integers(1_300_000_000, EPOCH, n), 0)
        expires = np.where(has_exp, fetched + rng.integers(60, 86400 * 365, n), 0)
        content = rng.integers(0, 2**63, n).astype(np.uint64)
        out.append((f, etags, modified, expires, fetched, content))
    return out


def schedule(rng: np.random.Generator, stored: np.ndarray, k: int, hit: float) -> np.ndarray:
    """``k`` fingerprints, a fraction ``hit`` of them stored."""
    present = rng.choice(stored, int(k * hit), replace=False)
    absent = rng.integers(-(2**63), 2**63 - 1, k - len(present), dtype=np.int64)
    q = np.concatenate([present, absent])
    rng.shuffle(q)
    return q


def time_lookups(store: ValidatorStore, queries: list[np.ndarray]) -> list[float]:
    out = []
    for q in queries:
        t0 = time.perf_counter()
        store.lookup(q)
        out.append(time.perf_counter() - t0)
    return out


def time_plans(store: ValidatorStore, queries: list[np.ndarray], now: float) -> list[float]:
    """What the crawl does per schedule (``Archive.plan``): the lookup, plus the
    conditional headers of the stale hits and a result for each fresh one."""
    archive = Archive(Path("."), 0, warc=False, revisits=True)
    archive.validators = store
    out = []
    for q in queries:
        jobs = [FetchJob(0, i, "http://h/", "h", fp=fp) for i, fp in enumerate(q.tolist())]
        t0 = time.perf_counter()
        archive.plan(jobs, now)
        out.append(time.perf_counter() - t0)
    return out


def run(mix: str, entries: int, lookups: int, rounds: int, hit: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    fps = np.unique(rng.integers(-(2**63), 2**63 - 1, entries, dtype=np.int64))
    while len(fps) < entries:  # collisions are rare; top up
        more = rng.integers(-(2**63), 2**63 - 1, entries - len(fps), dtype=np.int64)
        fps = np.unique(np.concatenate([fps, more]))
    todo = batches(rng, fps, mix)  # made before tracing: only the store is measured
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    store = ValidatorStore()
    for args in todo:
        store.update(*args)
    store._keys.merge()
    build_s = time.perf_counter() - t0
    del todo, args
    gc.collect()
    traced, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    nbytes = store.nbytes
    queries = [schedule(rng, fps, lookups, hit) for _ in range(rounds)]
    store.lookup(queries[0])  # warm up
    empty = time_lookups(store, queries)
    plans = time_plans(store, queries, NOW)
    extra = rng.integers(-(2**63), 2**63 - 1, RECENT_MAX // 2, dtype=np.int64)
    half = np.concatenate([extra[: len(extra) // 2], rng.choice(fps, len(extra) // 2)])
    for args in batches(rng, half, mix):  # half new URLs, half revisits: recent half full
        store.update(*args)
    half_full = time_lookups(store, queries)
    found = store.lookup(queries[0])
    return {
        "mix": mix,
        "entries": entries,
        "lookups": lookups,
        "hit": hit,
        "rounds": rounds,
        "found_per_schedule": int(found.found.sum()),
        "bytes_per_entry_nbytes": nbytes / entries,
        "bytes_per_entry_tracemalloc": traced / entries,
        "tracemalloc_peak_per_entry": peak / entries,
        "build_s": build_s,
        "lookup_ms_median": 1000 * statistics.median(empty),
        "lookup_ms_min": 1000 * min(empty),
        "lookup_ms_p90": 1000 * float(np.percentile(empty, 90)),
        "plan_ms_median": 1000 * statistics.median(plans),
        "plan_ms_p90": 1000 * float(np.percentile(plans, 90)),
        "lookup_ms_median_recent_half": 1000 * statistics.median(half_full),
        "lookup_ms_p90_recent_half": 1000 * float(np.percentile(half_full, 90)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=10_000_000)
    ap.add_argument("--lookups", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--hit", type=float, default=0.5, help="share of looked-up URLs stored")
    ap.add_argument("--mix", choices=["http-archive", "all-nginx", "all-md5", "all"],
                    default="all")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("results/bench_validators.json"))
    a = ap.parse_args()
    mixes = ["http-archive", "all-nginx", "all-md5"] if a.mix == "all" else [a.mix]
    rows = []
    for mix in mixes:
        rows.append(run(mix, a.entries, a.lookups, a.rounds, a.hit, a.seed))
        print(f"{mix}: done in {rows[-1]['build_s']:.0f} s", file=sys.stderr, flush=True)
        gc.collect()
    head = (f"{'mix':<13} {'B/entry':>8} {'traced':>7} {'peak':>6} "
            f"{'build s':>8} {'lookup ms':>10} {'min':>6} {'p90':>6} {'recent½ ms':>10} "
            f"{'p90':>6} {'plan ms':>8} {'p90':>6}")
    print(f"{a.entries:,} entries, {a.lookups:,} lookups ({a.hit:.0%} stored), "
          f"median of {a.rounds} rounds")
    print(head)
    for r in rows:
        print(f"{r['mix']:<13} {r['bytes_per_entry_nbytes']:>8.1f} "
              f"{r['bytes_per_entry_tracemalloc']:>7.1f} "
              f"{r['tracemalloc_peak_per_entry']:>6.1f} {r['build_s']:>8.1f} "
              f"{r['lookup_ms_median']:>10.2f} {r['lookup_ms_min']:>6.2f} "
              f"{r['lookup_ms_p90']:>6.2f} "
              f"{r['lookup_ms_median_recent_half']:>10.2f} {r['lookup_ms_p90_recent_half']:>6.2f} "
              f"{r['plan_ms_median']:>8.2f} {r['plan_ms_p90']:>6.2f}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"python": platform.python_version(), "numpy": np.__version__,
            "machine": platform.machine(), "processor": platform.processor()}
    a.out.write_text(json.dumps({"meta": meta, "results": rows}, indent=2) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()

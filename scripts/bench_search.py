"""Benchmark ``bspcrawl search`` against bm25s on a synthetic index of 10^6 documents.

``--docs`` documents (10^6 by default) of log-normal lengths (median 30 words) are drawn
from a Zipf vocabulary (``--vocab`` words, exponent ``--zipf``); the first ``--title``
words of each are its title. The index is written as one segment, joined into the rank
file format (``/pages`` and ``/search``, ``bspcrawl.index.ranking.join``), then loaded as
``bspcrawl search`` loads it, and ``--queries`` queries of 1 to 4 distinct words (drawn
from the same Zipf distribution as the text: common words are common in queries too) run
one at a time through:

* ``plain``: bspcrawl's plain BM25 (Lucene's, k1 1.5, b 0.75);
* ``bm25f``: bspcrawl's full score (BM25F with the title weighted 30 to 1, phrase hits);
* ``bm25s``: bm25s (PyPI; its default "lucene" method, k1 1.5, b 0.75, numpy backend) on
  the same documents and tokens, one ``retrieve`` call per query;
* ``bm25s-core``: bm25s's scoring without ``retrieve``'s bookkeeping: ``get_scores`` of the
  word ids, then its ``selection.topk``;
* ``bm25s-numba``: when numba is installed, ``retrieve`` with bm25s's numba backend (its
  fastest; one query per call runs serially, as bspcrawl does), compiled before timing.

It reports p50 and p95 latency and queries per second of each, side by side, and checks
that ``plain`` and bm25s give the same top 10: the same documents with the same scores in
the same order, where only documents of equal scores (float32) may swap places.

Run: ``.venv/bin/python scripts/bench_search.py`` (about 4 minutes and 6 GB at 10^6; needs
``pip install bm25s``); writes ``results/bench_search.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

from bspcrawl.index import ranking
from bspcrawl.index.store import STR, rank_path
from bspcrawl.index.terms import pair_hash, term_hash
from bspcrawl.search import Query, Searcher, Shard

K = 10


def corpus(docs: int, vocab: int, zipf: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, tokens): word counts of the documents and their word ids, concatenated."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(np.log(30), 0.6, docs), 3, 1000).astype(np.int64)
    cdf = np.cumsum(1 / np.arange(1, vocab + 1) ** zipf)
    tokens = np.searchsorted(cdf / cdf[-1], rng.random(int(lengths.sum())))
    return lengths, np.minimum(tokens, vocab - 1).astype(np.int32)


def distinct_pairs(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                      np.ndarray]:
    """The distinct (first, second) pairs, sorted by first then second, and their counts
    (``first`` < 2^31, ``second`` < 2^32)."""
    key = (first.astype(np.int64) << 32) | second.astype(np.int64)
    key, counts = np.unique(key, return_counts=True)
    return key >> 32, key & 0xFFFFFFFF, counts


def build(out: Path, lengths: np.ndarray, tokens: np.ndarray, vocab: int, title: int) -> None:
    """Write the rank file of the corpus into ``out``."""
    n = len(lengths)
    hashes = np.array([term_hash(b"w%d" % i) for i in range(vocab)], np.int64)
    doc = np.repeat(np.arange(n, dtype=np.int32), lengths)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    position = np.arange(len(tokens)) - np.repeat(starts, lengths)
    d, w, tf = distinct_pairs(doc, tokens)
    in_title = position < title
    td, tw, ttf = distinct_pairs(doc[in_title], tokens[in_title])
    title_tf = np.zeros(len(d), np.int64)
    title_tf[np.searchsorted((d << 32) | w, (td << 32) | tw)] = ttf
    weight = ranking.COMPASS_WEIGHTS["title"] / ranking.COMPASS_WEIGHTS["body"]
    nxt = np.flatnonzero(doc[1:] == doc[:-1])  # adjacent words of one document
    ph = pair_hash(hashes[tokens[nxt]], hashes[tokens[nxt + 1]])
    pair_key = np.unique((ph.astype(np.uint64) << np.uint64(32)) | doc[nxt].astype(np.uint64))
    titled = np.minimum(lengths, title)
    order = np.lexsort((d, hashes[w]))  # a segment's postings: by term, then doc
    with h5py.File(out / "segment.h5", "w") as seg:
        seg["pages/url"] = np.zeros(n, np.int8)  # (its length is all the join reads)
        seg["vocab"], seg["vocab_hash"] = np.zeros(0, "S1"), np.zeros(0, np.int64)
        g = seg.create_group(ranking.GROUP)
        g["postings/term"], g["postings/doc"] = hashes[w][order], d[order].astype(np.int32)
        g["postings/tf"] = tf[order].astype(np.int32)
        g["postings/wtf"] = (tf + (weight - 1) * title_tf)[order].astype(np.float32)
        g["pages/doc"] = np.arange(n, dtype=np.int64)
        g["pages/length"] = lengths.astype(np.int32)
        g["pages/wlength"] = (lengths + (weight - 1) * titled).astype(np.float32)
        g.create_dataset("pages/title", data=np.array([f"doc {i}" for i in range(n)],
                                                      dtype=object), dtype=STR)
        g["pairs/term"] = (pair_key >> np.uint64(32)).astype(np.int64)
        g["pairs/doc"] = (pair_key & np.uint64(0xFFFFFFFF)).astype(np.int32)
        for name, dtype in (("fp", np.int64), ("term", np.int64), ("tf", np.int32)):
            g[f"anchor/{name}"] = np.zeros(0, dtype)
    with h5py.File(rank_path(out, 0), "w") as f, h5py.File(out / "segment.h5", "r") as seg:
        f.create_dataset("pages/url", data=np.array(
            [f"http://bench.test/{i}" for i in range(n)], dtype=object), dtype=STR)
        f["pages/url_fp"] = np.arange(n, dtype=np.int64)
        f["pages/fetch_time"] = np.zeros(n)
        f["pages/content_fp"] = np.arange(1, n + 1, dtype=np.uint64)
        ranking.join(f, [seg], ranking.COMPASS_WEIGHTS, out)


def queries(count: int, vocab: int, zipf: float, seed: int) -> list[list[int]]:
    """``count`` queries of 1 to 4 distinct word ids."""
    rng = np.random.default_rng(seed + 1)
    cdf = np.cumsum(1 / np.arange(1, vocab + 1) ** zipf)
    out = []
    for size in rng.integers(1, 5, count).tolist():
        words: list[int] = []
        while len(words) < size:
            w = min(int(np.searchsorted(cdf / cdf[-1], rng.random())), vocab - 1)
            if w not in words:
                words.append(w)
        out.append(words)
    return out


def timed(run, items: list) -> tuple[list, np.ndarray]:
    """Results of ``run`` on each item, and each call's seconds."""
    results, seconds = [], []
    for item in items:
        t = time.perf_counter()
        results.append(run(item))
        seconds.append(time.perf_counter() - t)
    return results, np.array(seconds)


def summary(seconds: np.ndarray) -> dict[str, float]:
    """p50, p95 (ms) and queries per second."""
    return {"p50_ms": round(float(np.percentile(seconds, 50)) * 1e3, 3),
            "p95_ms": round(float(np.percentile(seconds, 95)) * 1e3, 3),
            "qps": round(len(seconds) / float(seconds.sum()), 1)}


def same_top(ours: tuple[list[int], list[float]], theirs: tuple[list[int], list[float]]
             ) -> str:
    """'same' (documents, order and scores), 'ties' (the same scores, place by place, and
    the documents that differ hold equal scores: equal-score documents in another order,
    or another of the documents tied at the 10th place) or 'differ'. bm25s fills its
    top 10 with documents of score 0 when fewer match: those are left out."""
    matched = [i for i, s in enumerate(theirs[1]) if s > 0]
    theirs = [theirs[0][i] for i in matched], [theirs[1][i] for i in matched]
    if len(ours[0]) != len(theirs[0]) or not np.allclose(ours[1], theirs[1], rtol=1e-6):
        return "differ"
    if ours[0] == theirs[0]:
        return "same"
    score = dict(zip(*theirs, strict=True))
    last = theirs[1][-1] if theirs[1] else 0.0
    for doc, s in zip(*ours, strict=True):
        if not np.isclose(score.get(doc, last), s, rtol=1e-6):
            return "differ"
    return "ties"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--vocab", type=int, default=200_000)
    ap.add_argument("--zipf", type=float, default=1.0)
    ap.add_argument("--title", type=int, default=4, help="title words of each document")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-bm25s", action="store_true", help="only bspcrawl")
    ap.add_argument("--keep", type=Path, help="build the index in this directory, or use "
                    "the one built there by an earlier run (same options)")
    ap.add_argument("--out", type=Path, default=Path("results/bench_search.json"))
    a = ap.parse_args()
    t0 = time.perf_counter()
    lengths, tokens = corpus(a.docs, a.vocab, a.zipf, a.seed)
    qs = queries(a.queries, a.vocab, a.zipf, a.seed)
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        where = a.keep or Path(tmp)
        if not rank_path(where, 0).exists():
            where.mkdir(parents=True, exist_ok=True)
            build(where, lengths, tokens, a.vocab, a.title)
        built = time.perf_counter() - t0
        t = time.perf_counter()
        shard = Shard(rank_path(where, 0))
        size = sum(p.stat().st_size for p in where.iterdir())
        loaded = time.perf_counter() - t
        hashes = np.array([term_hash(b"w%d" % i) for i in range(a.vocab)], np.int64)
        parsed = [Query.of_hashes([b"w%d" % w for w in q], hashes[q]) for q in qs]
        tops = {}
        for mode, plain in (("plain", True), ("bm25f", False)):
            searcher = Searcher([shard], plain=plain)
            t = time.perf_counter()
            searcher.top(parsed[0])  # the term parts are computed once, at the first query
            first = time.perf_counter() - t
            hits, seconds = timed(lambda q, s=searcher: s.top(q, K), parsed)
            tops[mode] = [([h.doc for h in hs], [h.score for h in hs]) for hs in hits]
            rows[mode] = {**summary(seconds), "first_query_s": round(first, 2)}
    if not a.no_bm25s:
        import bm25s

        offsets = np.concatenate(([0], np.cumsum(lengths)))
        ids = [tokens[offsets[i]:offsets[i + 1]].tolist() for i in range(a.docs)]
        vocab = {f"w{i}": i for i in range(a.vocab)}
        t = time.perf_counter()
        retriever = bm25s.BM25(k1=1.5, b=0.75)
        retriever.index((ids, vocab), show_progress=False)
        bm25s_built = time.perf_counter() - t
        del ids
        words = [[f"w{w}" for w in q] for q in qs]
        found, seconds = timed(lambda q: retriever.retrieve([q], k=K, show_progress=False),
                               words)
        rows["bm25s"] = summary(seconds)
        ids_of = [[vocab[w] for w in q] for q in words]
        _, seconds = timed(lambda q: bm25s.selection.topk(retriever.get_scores(q), K),
                           ids_of)
        rows["bm25s-core"] = summary(seconds)
        try:
            import numba  # noqa: F401
        except ImportError:
            pass
        else:
            retriever.backend = "numba"
            retriever.retrieve([words[0]], k=K, show_progress=False)  # compiles
            _, seconds = timed(lambda q: retriever.retrieve([q], k=K, show_progress=False),
                               words)
            rows["bm25s-numba"] = summary(seconds)
        theirs = [(r.documents[0].tolist(), r.scores[0].tolist()) for r in found]
        checks = [same_top(o, t) for o, t in zip(tops["plain"], theirs, strict=True)]
        rows["bm25s"]["build_s"] = round(bm25s_built, 1)
        rows["check"] = {k: checks.count(k) for k in ("same", "ties", "differ")}
    meta = {"docs": a.docs, "vocab": a.vocab, "zipf": a.zipf, "queries": a.queries,
            "postings": int(len(shard.docs)), "index_bytes": size,
            "build_s": round(built, 1), "load_s": round(loaded, 1),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} "
                       f"cores, Python {platform.python_version()}, numpy {np.__version__}"}
    print(f"{a.docs} docs, {meta['postings']} postings, index {size / 2**20:.0f} MiB "
          f"(built in {built:.0f} s, loaded in {loaded:.1f} s); {a.queries} queries")
    print(f"{'engine':10} {'p50 ms':>8} {'p95 ms':>8} {'queries/s':>10}")
    for name in ("plain", "bm25f", "bm25s", "bm25s-core", "bm25s-numba"):
        if name in rows:
            r = rows[name]
            print(f"{name:10} {r['p50_ms']:8.2f} {r['p95_ms']:8.2f} {r['qps']:10.1f}")
    if "check" in rows:
        print(f"top {K}, plain vs bm25s: {rows['check']}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"meta": meta, "results": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()

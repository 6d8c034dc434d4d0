"""Precision and recall of the duplicate clusters (``inspect --duplicates``) on testweb, and
the cost of the SimHash per page.

Builds a local web with --mirrors byte-identical mirror hosts and --near-mirrors hosts of
near-copies (each page with one small edit: ``testweb.adversarial.near_edit``), takes the
pages a crawl fetches (the truth), and runs on each the commit's own steps without the
network: ``parse_html``, ``count_terms``, ``simhash`` and xxh3 of the body; then
``duplicates.clusters`` over them all. A pair of pages is *predicted* when both are in one
cluster; *true* when ``Web.copies()`` says one copies the other. Every predicted pair not
true is printed with the overlap of the two texts (Jaccard similarity of their sets of
3-word shingles): unrelated testweb pages can share long runs of text, as they are cut
from one shared corpus.

Prints a markdown table and writes JSON to --out.

    .venv/bin/python scripts/bench_duplicates.py [--pages 20000] [--hosts 200]
        [--mirrors 2] [--near-mirrors 8]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import time
from pathlib import Path

import numpy as np
import xxhash

from bspcrawl.index.duplicates import clusters
from bspcrawl.index.simhash import simhash
from bspcrawl.index.terms import count_terms
from bspcrawl.robots.links import LinkCache, parse_html
from bspcrawl.testweb import Web, WebConfig
from bspcrawl.testweb.config import PAGE


def shingles(text: bytes) -> set[tuple[bytes, ...]]:
    """The 3-word shingles of a text."""
    words = text.lower().split()
    return set(zip(words, words[1:], words[2:], strict=False))


def pairs_of(label: np.ndarray) -> set[tuple[int, int]]:
    """Every pair (i < j) of rows with the same cluster label."""
    found: set[tuple[int, int]] = set()
    order = np.argsort(label, kind="stable")
    for _, group in itertools.groupby(order.tolist(), key=label.__getitem__):
        found.update(itertools.combinations(sorted(group), 2))
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--mirrors", type=int, default=2)
    ap.add_argument("--near-mirrors", type=int, default=8)
    ap.add_argument("--out", default="results/bench_duplicates.json")
    args = ap.parse_args()

    web = Web(WebConfig(pages=args.pages, hosts=args.hosts, mirrors=args.mirrors,
                        near_mirrors=args.near_mirrors))
    urls = web.truth()
    row = {url: i for i, url in enumerate(urls)}
    cache = LinkCache()
    texts, content, sims = [], np.zeros(len(urls), np.uint64), np.zeros(len(urls), np.uint64)
    ok = np.zeros(len(urls), bool)
    simhash_s = 0.0
    for i, url in enumerate(urls):
        r = web.resource(url)
        if web.kind[r] == PAGE:
            body = web.html(r)
        elif web.copy_of[r] >= 0:
            body = web.copy_html(r)
        else:
            texts.append(b"")
            continue  # a redirect or a 404: not an indexable answer
        text = parse_html(body, url, cache).text
        terms = count_terms(text)
        started = time.perf_counter()
        sims[i] = simhash(terms)
        simhash_s += time.perf_counter() - started
        content[i] = xxhash.xxh3_64_intdigest(body)
        ok[i] = True
        texts.append(text)
    label = clusters(content, sims, ok)
    predicted = pairs_of(label)
    truth = {kind: {tuple(sorted((row[a], row[b]))) for a, b, k in web.copies()
                    if k == kind and a in row and b in row} for kind in ("exact", "near")}
    every = truth["exact"] | truth["near"]
    wrong = sorted(predicted - every)
    overlap = [len(shingles(texts[a]) & shingles(texts[b]))
               / max(len(shingles(texts[a]) | shingles(texts[b])), 1) for a, b in wrong]

    n = int(ok.sum())
    print(f"{n} indexable pages ({len(urls)} URLs), {len(truth['exact'])} exact and "
          f"{len(truth['near'])} near copy pairs in the truth; SimHash "
          f"{simhash_s / n * 1e6:.1f} µs a page\n")
    print("| pairs | true | predicted | found | precision | recall |")
    print("| --- | --- | --- | --- | --- | --- |")
    result = {"args": vars(args), "python": platform.python_version(),
              "machine": platform.processor() or platform.machine(), "pages": n,
              "simhash_us": simhash_s / n * 1e6, "rows": [],
              "wrong": [[urls[a], urls[b], o] for (a, b), o in zip(wrong, overlap, strict=True)]}
    for kind, true in (("exact", truth["exact"]), ("near", truth["near"]), ("all", every)):
        found = len(predicted & true)
        precision = found / max(len(predicted), 1) if kind == "all" else None
        recall = found / max(len(true), 1)
        shown = f"{precision:.4f}" if precision is not None else ""
        print(f"| {kind} | {len(true)} | {len(predicted) if kind == 'all' else ''} | {found} "
              f"| {shown} | {recall:.4f} |")
        result["rows"].append({"pairs": kind, "true": len(true), "found": found,
                               "precision": precision, "recall": recall})
    bins = np.histogram(overlap, bins=[0, 0.5, 0.7, 0.9, 1.01])[0].tolist()
    print(f"\n{len(wrong)} predicted pairs are no copy; their texts' 3-shingle Jaccard "
          f"similarity: {bins[0]} below 0.5, {bins[1]} in [0.5, 0.7), {bins[2]} in "
          f"[0.7, 0.9), {bins[3]} at 0.9 or more")
    result["wrong_jaccard_bins"] = bins
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()

"""Benchmark of bspcrawl.robots.links.parse_html: link extraction and index text.

Generates synthetic ~50 KB HTML pages with ~300 links each (navigation shared by
every page, relative links within the directory and across directories,
absolute links to other sites, fragments, repeated hrefs, a <base>, script and
style), then times ``parse_html`` over them in one process (so the figures are
per core) with CPU time (``time.process_time``):

* cold: a new LinkCache, first pass over the pages;
* warm: the same LinkCache, second pass (a long crawl of a site is mostly warm);
* no cache: a new LinkCache for every page (per-page de-duplication only);
* stages: lxml parse + free alone, the tree walk, text extraction.

Prints a table, writes JSON to --out, and with --profile prints the top of a
cProfile of the warm pass.

    .venv/bin/python scripts/bench_links.py [--pages 200] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import platform
import pstats
import random
import sys
import time
from pathlib import Path

from lxml import etree

from bspcrawl.index.terms import term_counts
from bspcrawl.robots.links import LinkCache, _parser, parse_html

SITE = "http://127.1.0.1:8080"
_VOCABULARY = (
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when if "
    "crawler parallel queue superstep priority frontier index robots fetch schedule window "
    "bulk synchronous partition message exchange politeness host delay página größe 東京"
)
WORDS = _VOCABULARY.split()


def page_url(i: int) -> str:
    """Page i: 20 directories of 8 pages, then pages alone in deep directories."""
    if i < 160:
        return f"{SITE}/docs/sec{i % 20}/page{i // 20}.html"
    return f"{SITE}/blog/2024/{i:03d}/post-title-{i}/"


def make_page(i: int, n_pages: int, rng: random.Random, size: int = 50_000) -> bytes:
    """One synthetic page of about *size* bytes with about 300 links."""
    sec = i % 20
    nav = [f'<li><a href="/docs/sec{k}/page0.html">Section {k}</a></li>' for k in range(20)]
    nav += [f'<li><a href="{SITE}/about/{k}.html">About {k}</a></li>' for k in range(10)]
    links = []
    for _ in range(270):
        kind = rng.random()
        j = rng.randrange(n_pages)
        if kind < 0.25:
            href = f"page{rng.randrange(8)}.html"
        elif kind < 0.40:
            href = f"page{rng.randrange(8)}.html#s{rng.randrange(5)}"
        elif kind < 0.55:
            href = f"../sec{rng.randrange(20)}/page{rng.randrange(8)}.html"
        elif kind < 0.65:
            href = page_url(j)[len(SITE):]
        elif kind < 0.78:
            href = f"https://example.com/ref/{rng.randrange(400)}"
        elif kind < 0.88:
            href = f"#h{rng.randrange(30)}"
        elif kind < 0.92:
            href = f"?page={rng.randrange(5)}"
        elif kind < 0.95:
            href = "javascript:void(0)" if kind < 0.935 else "mailto:team@example.org"
        else:
            href = f"/docs/sec{sec}/page{rng.randrange(8)}.html?ref=nav"
        links.append(href)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>Page {i} of the synthetic site</title>",
        "<link rel='stylesheet' href='/static/site.css'>",
        f"<link rel='canonical' href='{page_url(i)}'>",
        "<script>var config = {a: 1, b: '<a href=\"nope\">'};</script>",
        "<style>body { font-family: sans-serif } .x > a { color: red }</style>",
        "</head><body><nav><ul>", *nav, "</ul></nav><main>",
    ]
    body_len = sum(map(len, parts))
    k = 0
    while body_len < size - 400:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(8, 30)))
        if k < len(links):
            chunk = f'<p id="h{k}">{words} <a href="{links[k]}" class="ref">{words[:20]}</a></p>\n'
            k += 1
        else:
            chunk = f"<p>{words}</p>\n"
        parts.append(chunk)
        body_len += len(chunk.encode())
    parts += [f'<a href="{h}">more</a>' for h in links[k:]]
    parts.append("</main><footer><a href='#top'>top</a></footer></body></html>")
    return "".join(parts).encode()


def measure(fns: dict, repeat: int) -> dict[str, list[float]]:
    """CPU seconds of *repeat* runs of each fn(), interleaved so drifts hit all alike."""
    runs: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.process_time()
            fn()
            runs[name].append(time.process_time() - start)
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=200, help="number of pages (default 200)")
    ap.add_argument("--repeat", type=int, default=7, help="runs per figure, best kept")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("results/bench_links.json"))
    ap.add_argument("--profile", action="store_true", help="print a cProfile of a warm pass")
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    pages = [(make_page(i, args.pages, rng), page_url(i)) for i in range(args.pages)]
    n = len(pages)
    mean_kb = sum(len(b) for b, _ in pages) / n / 1000
    raw_links = sum(b.count(b"href=") + b.count(b"src=") for b, _ in pages) - n * 2

    def run(cache_for_page) -> None:
        for body, url in pages:
            parse_html(body, url, cache_for_page())

    def cold() -> None:
        cache = LinkCache()
        run(lambda: cache)

    warm_cache = LinkCache()
    run(lambda: warm_cache)
    parser = _parser("utf-8")

    def parse_only() -> None:
        for body, _ in pages:
            etree.fromstring(body, parser)

    def walk_only() -> None:  # parse + the tree walk, as parse_html does it
        for body, _ in pages:
            root = etree.fromstring(body, parser)
            for el in root.iter("a", "area", "link", "frame", "iframe", "meta", "base"):
                el.get("href")

    def text_only() -> None:  # parse + text, as parse_html does it
        for body, _ in pages:
            root = etree.fromstring(body, parser)
            body_el = root.find("body")
            etree.strip_elements(body_el, "script", "style", with_tail=False)
            etree.tostring(body_el, method="text", encoding="utf-8", with_tail=False)

    texts = [parse_html(b, u, warm_cache).text for b, u in pages]

    def terms_only() -> None:
        for text in texts:
            term_counts(text)

    runs = measure({
        "cold": cold,
        "warm": lambda: run(lambda: warm_cache),
        "no_cache": lambda: run(LinkCache),
        "lxml_parse_and_free": parse_only,
        "parse_and_walk": walk_only,
        "parse_and_text": text_only,
        "term_counts": terms_only,
    }, args.repeat)
    figures = {name: min(seconds) for name, seconds in runs.items()}
    links_out = sum(len(parse_html(b, u, warm_cache).links) for b, u in pages)

    print(f"{n} pages, {mean_kb:.1f} KB mean, {raw_links / n:.0f} hrefs/page, "
          f"{links_out / n:.0f} unique links/page out; Python {platform.python_version()}, "
          f"lxml {etree.__version__}, libxml2 {'.'.join(map(str, etree.LIBXML_VERSION))}")
    print(f"best of {args.repeat} interleaved runs (CPU time; median in brackets)")
    print(f"{'figure':<22}{'pages/s/core':>14}{'µs/page':>18}{'µs/href':>10}")
    rows = {}
    for name, seconds in figures.items():
        per_page = seconds / n * 1e6
        median = sorted(runs[name])[len(runs[name]) // 2] / n * 1e6
        rows[name] = {"cpu_s": seconds, "pages_per_s": n / seconds, "us_per_page": per_page,
                      "us_per_page_median": median, "us_per_href": seconds / raw_links * 1e6}
        print(f"{name:<22}{n / seconds:>14,.0f}{per_page:>10.0f} [{median:>5.0f}]"
              f"{per_page * n / raw_links:>10.2f}")
    walk = figures["parse_and_walk"] - figures["lxml_parse_and_free"]
    text = figures["parse_and_text"] - figures["lxml_parse_and_free"]
    links = figures["warm"] - figures["lxml_parse_and_free"] - walk - text
    print(f"warm page = lxml parse+free {figures['lxml_parse_and_free'] / n * 1e6:.0f} µs"
          f" + tree walk {walk / n * 1e6:.0f} + text {text / n * 1e6:.0f}"
          f" + href handling {links / n * 1e6:.0f} ({links / raw_links * 1e6:.2f} µs/href)")
    print(f"cache: {warm_cache.entries} entries; {warm_cache.resolved} of {warm_cache.lookups}"
          f" unique-per-page hrefs resolved by ada-url over all passes")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "pages": n, "mean_kb": mean_kb, "hrefs_per_page": raw_links / n,
        "links_out_per_page": links_out / n, "figures": rows,
        "python": platform.python_version(), "lxml": etree.__version__,
    }, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")

    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        run(lambda: warm_cache)
        prof.disable()
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(12)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of bspcrawl.robots.links.parse_html (lexbor) against the same job done with lxml.

Two sets of pages:

* synthetic: ~50 KB pages with ~300 links each (navigation shared by every page,
  relative links within the directory and across directories, absolute links to
  other sites, fragments, repeated hrefs, a <base>, script and style);
* testweb: the first pages of the local web (``bspcrawl.testweb``, default
  ``WebConfig``), about 23 KB of text and 30 links each.

For each, in one process (so the figures are per core), with CPU time
(``time.process_time``), best of --repeat runs interleaved so that drifts in the
load hit every figure alike:

* full job: ``parse_html`` (links, text, title, meta robots) with a warm LinkCache
  (a long crawl of a site is mostly warm), and with a cold one;
* links only: the same without the index text (parse, link elements, resolution);
* link extraction: the links as in the markup, before resolution (the figure of
  Dominos' flex parser and of lxml's ``//a/@href`` in issue 4): markup scan, parse,
  the link elements' hrefs;
* parse + free: the parser alone;
* markup scan: lexbor only, the scan for hostile nesting before each parse;
* term counting of the pages' text (``bspcrawl.index.terms``), parser-independent, and
  as it was before (a regex looked for over-long tokens in the whole text).

The lxml side is the implementation ``parse_html`` had before lexbor
(``lxml_parse_html`` below, same LinkCache); both are checked to find the same
links. Prints a table, writes JSON to --out, and with --profile prints the top of
a cProfile of the lexbor warm pass.

    .venv/bin/python scripts/bench_links.py [--pages 100] [--repeat 21] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import platform
import pstats
import random
import re
import sys
import time
from collections import Counter
from importlib.metadata import version
from pathlib import Path

from lxml import etree
from selectolax.lexbor import LexborHTMLParser

from bspcrawl.index import terms
from bspcrawl.index.terms import count_terms
from bspcrawl.robots import links as lexbor_links
from bspcrawl.robots.links import LinkCache, ParsedPage, parse_html
from bspcrawl.testweb import Web, WebConfig
from bspcrawl.urls import parse, resolve

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


def testweb_pages(n: int) -> list[tuple[bytes, str]]:
    """The first *n* pages of the local web, with their URLs."""
    web = Web(WebConfig())
    return [(web.html(i), web.url(i)) for i in range(n)]


# -- the lxml implementation parse_html had before lexbor (for comparison) --------------

_LXML_PARSERS: dict[str | None, etree.HTMLParser] = {}
_LXML_TAGS = ("a", "area", "link", "frame", "iframe", "meta", "base", "title")
_DECLARED = re.compile(rb"<meta[^>]+charset", re.I)


def _lxml_parser(encoding: str | None) -> etree.HTMLParser:
    parser = _LXML_PARSERS.get(encoding)
    if parser is None:
        parser = _LXML_PARSERS[encoding] = etree.HTMLParser(
            encoding=encoding, collect_ids=False, remove_comments=True, remove_pis=True,
            no_network=True,
        )
    return parser


def _lxml_encoding(body: bytes, charset: str | None) -> str | None:
    if body.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return None
    if charset:
        return charset.strip().lower()
    if body.isascii() or _DECLARED.search(body, 0, 1024):
        return None
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "utf-8"


def _lxml_tree(body: bytes, charset: str | None) -> etree._Element | None:
    try:
        parser = _lxml_parser(_lxml_encoding(body, charset))
    except LookupError:
        parser = _lxml_parser(_lxml_encoding(body, None))
    try:
        return etree.fromstring(body, parser)
    except (etree.LxmlError, ValueError):
        return None


def _lxml_hrefs(root: etree._Element) -> tuple[list[str], str | None, str | None, list[str]]:
    """(hrefs, <base href>, title, meta robots contents) of an lxml tree, as parse_html
    found them; hrefs as in the markup, their "#fragment" cut off."""
    hrefs: list[str] = []
    add = hrefs.append
    base_href = title = None
    robots: list[str] = []
    for el in root.iter(_LXML_TAGS):
        tag = el.tag
        if tag == "a" or tag == "area":
            href = el.get("href")
        elif tag == "link":
            rel = el.get("rel")
            if not rel:
                continue
            rels = set(rel.lower().split())
            if rels.isdisjoint({"canonical", "alternate", "next"}) or not rels.isdisjoint(
                    {"stylesheet", "icon"}):
                continue
            href = el.get("href")
        elif tag == "iframe" or tag == "frame":
            href = el.get("src")
        elif tag == "meta":
            name = el.get("name")
            if name and name.strip().lower() == "robots":
                robots.append(el.get("content") or "")
                continue
            equiv = el.get("http-equiv")
            if not (equiv and equiv.strip().lower() == "refresh"):
                continue
            href = lexbor_links._refresh_url(el.get("content") or "")
        elif tag == "base":
            if base_href is None:
                base_href = el.get("href")
            continue
        else:
            if title is None:
                title = " ".join(el.text.split()) if el.text else ""
            continue
        if href is not None:
            add(href.partition("#")[0] if "#" in href else href)
    return hrefs, base_href, title, robots


def _lxml_links(root: etree._Element, url: str, links: LinkCache) -> tuple:
    """(links, title, noindex, nofollow) from an lxml tree, as parse_html did."""
    hrefs, base_href, title, robots = _lxml_hrefs(root)
    directives = set(",".join(robots).lower().replace(",", " ").split())
    noindex = bool(directives & {"noindex", "none"})
    nofollow = bool(directives & {"nofollow", "none"})
    page_links: list[str] = []
    page_url_ = parse(url)
    if page_url_ is not None and not nofollow and hrefs:
        base = page_url_
        if base_href is not None:
            base = resolve(base_href, page_url_) or page_url_
        page_links = links.resolve_unique(dict.fromkeys(hrefs), base)
    return page_links, title or "", noindex, nofollow


def lxml_parse_html(body: bytes, url: str, links: LinkCache, *, charset=None) -> ParsedPage:
    """parse_html as it was with lxml."""
    root = _lxml_tree(body, charset)
    if root is None:
        return ParsedPage()
    page_links, title, noindex, nofollow = _lxml_links(root, url, links)
    text = b""
    if not noindex:
        body_el = root.find("body")
        if body_el is not None:
            etree.strip_elements(body_el, "script", "style", with_tail=False)
            text = etree.tostring(body_el, method="text", encoding="utf-8", with_tail=False)
        text = title.encode() + b"\n" + text
    return ParsedPage(page_links, text, title, noindex, nofollow)


def lxml_links_only(body: bytes, url: str, links: LinkCache) -> list[str]:
    root = _lxml_tree(body, None)
    return [] if root is None else _lxml_links(root, url, links)[0]


def lxml_hrefs(body: bytes) -> list[str]:
    """Link extraction alone with lxml: parse, then the link elements' hrefs."""
    root = _lxml_tree(body, None)
    return [] if root is None else _lxml_hrefs(root)[0]


def lexbor_hrefs(body: bytes) -> dict[str, None]:
    """Link extraction alone as parse_html does it: the markup scan, the parse, then the
    link elements' hrefs (unique, as in the markup)."""
    data, counts, _ = lexbor_links._defused(lexbor_links._utf8(body, None))
    return lexbor_links._find(data, counts)[1].hrefs


def lexbor_links_only(body: bytes, url: str, links: LinkCache) -> list[str]:
    """parse_html without the index text."""
    data, counts, _ = lexbor_links._defused(lexbor_links._utf8(body, None))
    _tree, found = lexbor_links._find(data, counts)
    page_url_ = parse(url)
    base = page_url_
    if found.base is not None:
        base = resolve(found.base, page_url_) or page_url_
    return links.resolve_unique(found.hrefs, base)


_LONG = re.compile(rb"[^ ]{%d}" % (terms.MAX_TERM_BYTES + 1))


def term_counts_before(text: bytes) -> dict[bytes, int]:
    """Term counting as it was: Counter of the split text, long tokens found by a regex."""
    words = text.translate(terms._TABLE)
    counts = Counter(words.split())
    if _LONG.search(words):
        for term in [t for t in counts if len(t) > terms.MAX_TERM_BYTES]:
            del counts[term]
    return counts


# -- measuring ---------------------------------------------------------------------------

def measure(fns: dict, repeat: int) -> dict[str, list[float]]:
    """CPU seconds of *repeat* runs of each fn(), interleaved so drifts hit all alike."""
    runs: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.process_time()
            fn()
            runs[name].append(time.process_time() - start)
    return runs


def figures_for(pages: list[tuple[bytes, str]], repeat: int) -> tuple[dict, dict]:
    """The measured functions of one set of pages -> {figure: {parser: seconds runs}}."""
    warm = {"lxml": LinkCache(), "lexbor": LinkCache()}
    for body, url in pages:
        lxml_parse_html(body, url, warm["lxml"])
        parse_html(body, url, warm["lexbor"])
    lxml_html_parser = _lxml_parser("utf-8")
    texts = [parse_html(b, u, warm["lexbor"]).text for b, u in pages]
    utf8 = [lexbor_links._utf8(b, None) for b, _ in pages]
    options = lexbor_links._NO_EVENTS

    def full(fn, cache_of):
        def run():
            for body, url in pages:
                fn(body, url, cache_of())
        return run

    def cold(fn):
        def run():
            cache = LinkCache()
            for body, url in pages:
                fn(body, url, cache)
        return run

    fns = {
        ("full job, warm cache", "lxml"): full(lxml_parse_html, lambda: warm["lxml"]),
        ("full job, warm cache", "lexbor"): full(parse_html, lambda: warm["lexbor"]),
        ("full job, cold cache", "lxml"): cold(lxml_parse_html),
        ("full job, cold cache", "lexbor"): cold(parse_html),
        ("link extraction", "lxml"): lambda: [lxml_hrefs(b) for b, _ in pages] and None,
        ("link extraction", "lexbor"): lambda: [lexbor_hrefs(b) for b, _ in pages] and None,
        ("links only, warm cache", "lxml"): full(lxml_links_only, lambda: warm["lxml"]),
        ("links only, warm cache", "lexbor"): full(lexbor_links_only, lambda: warm["lexbor"]),
        ("parse + free", "lxml"): lambda: [etree.fromstring(b, lxml_html_parser)
                                           for b, _ in pages] and None,
        ("parse + free", "lexbor"): lambda: [LexborHTMLParser(d, options=options)
                                             for d in utf8] and None,
        ("markup scan", "lexbor"): lambda: [lexbor_links._defused(d) for d in utf8] and None,
        ("term_counts", "before"): lambda: [term_counts_before(t) for t in texts] and None,
        ("term_counts", "now"): lambda: [count_terms(t) for t in texts] and None,
    }
    runs = measure(fns, repeat)
    table: dict[str, dict[str, dict]] = {}
    n = len(pages)
    for (figure, parser), seconds in runs.items():
        best, median = min(seconds), sorted(seconds)[len(seconds) // 2]
        table.setdefault(figure, {})[parser] = {
            "cpu_s": best, "us_per_page": best / n * 1e6, "us_per_page_median": median / n * 1e6,
            "pages_per_s": n / best,
        }
    assert all(count_terms(t).as_dict() == term_counts_before(t) for t in texts)
    agree = sum(lxml_parse_html(b, u, LinkCache()).links == parse_html(b, u, LinkCache()).links
                for b, u in pages)
    stats = {
        "pages": n, "mean_kb": sum(len(b) for b, _ in pages) / n / 1000,
        "hrefs_per_page": sum(b.count(b"href=") + b.count(b"src=") for b, _ in pages) / n,
        "links_out_per_page": sum(len(parse_html(b, u, warm["lexbor"]).links)
                                  for b, u in pages) / n,
        "pages_with_same_links": agree,
    }
    return table, stats


def print_table(name: str, table: dict, stats: dict, repeat: int) -> None:
    print(f"\n{name}: {stats['pages']} pages, {stats['mean_kb']:.1f} KB mean, "
          f"{stats['hrefs_per_page']:.0f} hrefs/page, {stats['links_out_per_page']:.0f} links "
          f"out; same links from both parsers on {stats['pages_with_same_links']} pages")
    print(f"best of {repeat} interleaved runs, CPU time per core (median in brackets)")
    print(f"{'figure':<24}{'lxml µs/page':>19}{'pages/s':>9}{'lexbor µs/page':>21}"
          f"{'pages/s':>9}{'speed-up':>10}")
    for figure, row in table.items():
        if figure == "term_counts":
            before, now = row["before"], row["now"]
            print(f"term_counts of the text: {now['us_per_page']:.0f} µs/page "
                  f"[{now['us_per_page_median']:.0f}], before {before['us_per_page']:.0f} "
                  f"[{before['us_per_page_median']:.0f}]: {before['cpu_s'] / now['cpu_s']:.2f}x")
            continue
        cells = []
        for parser in ("lxml", "lexbor"):
            cell = row.get(parser)
            if cell is None:
                cells.append(f"{'':>19}{'':>9}" if parser == "lxml" else f"{'':>21}{'':>9}")
                continue
            width = 10 if parser == "lxml" else 12
            cells.append(f"{cell['us_per_page']:>{width}.0f} [{cell['us_per_page_median']:>5.0f}]"
                         f"{cell['pages_per_s']:>9,.0f}")
        speedup = (f"{row['lxml']['cpu_s'] / row['lexbor']['cpu_s']:>9.2f}x"
                   if "lxml" in row and "lexbor" in row else "")
        print(f"{figure:<24}{cells[0]}{cells[1]}{speedup}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=100, help="pages per set (default 100)")
    ap.add_argument("--repeat", type=int, default=21, help="runs per figure, best kept")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("results/bench_links.json"))
    ap.add_argument("--profile", action="store_true", help="print a cProfile of a warm pass")
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    sets = {
        "synthetic": [(make_page(i, args.pages, rng), page_url(i)) for i in range(args.pages)],
        "testweb": testweb_pages(args.pages),
    }
    print(f"Python {platform.python_version()}; lxml {etree.__version__} (libxml2 "
          f"{'.'.join(map(str, etree.LIBXML_VERSION))}); selectolax {version('selectolax')}")
    results = {}
    for name, pages in sets.items():
        table, stats = figures_for(pages, args.repeat)
        print_table(name, table, stats, args.repeat)
        results[name] = {**stats, "figures": table}

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "python": platform.python_version(), "lxml": etree.__version__,
        "libxml2": ".".join(map(str, etree.LIBXML_VERSION)), "selectolax": version("selectolax"),
        "repeat": args.repeat, "sets": results,
    }, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")

    if args.profile:
        cache = LinkCache()
        pages = sets["synthetic"]
        for body, url in pages:
            parse_html(body, url, cache)
        prof = cProfile.Profile()
        prof.enable()
        for body, url in pages:
            parse_html(body, url, cache)
        prof.disable()
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(12)
    return 0


if __name__ == "__main__":
    sys.exit(main())

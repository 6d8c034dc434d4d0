"""Where a page's CPU goes: the commit pipeline's stages replayed on a crawl's real pages.

Reads every response record of a finished crawl's WARC files (``DIR/warc/*.warc.gz``),
rebuilds each as the ``FetchResult`` the fetch workers would hand over, and commits them
all, in one process, through a fresh archive, store and committer (``bspcrawl.commit``),
the way a rank does (its WARC and HDF5 files go to a temporary directory). Then times,
on the same pages, each stage alone (``parse_html``, ``count_terms``, the WARC records,
the store) and the compiled work inside them that no Python change can remove: lexbor's
parse, the text of the body, two SHA-1 digests and the gzip compression of the records.
CPU is ``time.process_time`` (this process only: no fetching, no server), best of
``--repeat`` passes; the stages overlap (the commit includes them all), and the rest is
the Python around them.

    python scripts/bench_stages.py DIR [--repeat 3]     # DIR: a crawl's output directory

Used for ``docs/performance/realweb.md`` ("What bounds it") on a crawl of the four
documentation trees of ``bench_realweb.py``.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from isal import isal_zlib
from selectolax.lexbor import LexborHTMLParser
from warcio.archiveiterator import ArchiveIterator

from bspcrawl.analysis import LinkKeys
from bspcrawl.commit import Committer, charset, is_html
from bspcrawl.index.archive import Archive
from bspcrawl.index.store import RankStore
from bspcrawl.index.terms import count_terms
from bspcrawl.index.warc import WarcWriter
from bspcrawl.messages import FetchJob, FetchResult
from bspcrawl.robots.links import LinkCache, parse_html
from bspcrawl.settings import Settings
from bspcrawl.urls import host_key


def responses(out: Path) -> list[FetchResult]:
    """The crawl's responses, in WARC order, as fetch results (one schedule per 8)."""
    found: list[FetchResult] = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as f:
            for rec in ArchiveIterator(f):
                if rec.rec_type != "response":
                    continue
                url = rec.rec_headers.get_header("WARC-Target-URI")
                headers = {k.lower(): v for k, v in rec.http_headers.headers}
                job = FetchJob(len(found) // 8, len(found) % 8, url, host_key(url))
                found.append(FetchResult(
                    job, status=int(rec.http_headers.get_statuscode()),
                    content_type=headers.get("content-type", ""), headers=headers,
                    body=rec.content_stream().read(), started=time.time()))
    return found


def cpu(work: Callable[[], object], repeat: int) -> float:
    """Best CPU-seconds of ``repeat`` runs of ``work``."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def commit_all(results: list[FetchResult], settings: Settings) -> None:
    """Commit every result as one rank does (archive, store, committer) in a temp dir."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = Archive(Path(tmp), 0)
        store = RankStore(Path(tmp), 0, 1, {}, flush_pages=settings.index_flush_pages,
                          archive=archive)
        committer = Committer(archive, store, settings.agent_token,
                              LinkKeys(settings.url_strip_params))
        for res in results:
            res.job.fp = hash(res.job.url)
            committer.commit(res)
        archive.close()
        store.close(len(results) // 8)


def write_warc(results: list[FetchResult]) -> None:
    """The WARC records of every result, alone."""
    with tempfile.TemporaryDirectory() as tmp, WarcWriter(Path(tmp)) as writer:
        for res in results:
            writer.write_fetch(res)


def lexbor(pages: list[bytes], text: bool = False) -> None:
    """Parse each page (each tree freed before the next), and take its body's text."""
    for page in pages:
        body = LexborHTMLParser(page).body
        if text and body is not None:
            body.text_lexbor()


def records_gzip(results: list[FetchResult]) -> None:
    for res in results:
        for data in (res.body, b"x" * 250):  # the response record and the request record
            z = isal_zlib.compressobj(1, isal_zlib.DEFLATED, 31)
            z.compress(data)
            z.flush()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="a finished crawl's output directory")
    p.add_argument("--repeat", type=int, default=3, help="passes of each stage (best kept)")
    args = p.parse_args()
    results = responses(args.out)
    if not results:
        sys.exit(f"bench_stages: no WARC response records in {args.out}/warc")
    settings = Settings().validate()
    html = [r for r in results if (200 <= r.status < 300) and is_html(r)]
    cache = LinkCache()
    parsed = [parse_html(r.body, r.job.url, cache, charset=charset(r.content_type))
              for r in html]
    bodies = [r.body for r in html]
    n, rows = len(results), []

    def stage(name: str, work: Callable[[], object], per: int) -> None:
        seconds = cpu(work, args.repeat)
        rows.append((name, seconds, seconds / per * 1e6, seconds / n * 1e6))

    stage("commit, all stages (WARC, HDF5 store, index)",
          lambda: commit_all(results, settings), n)
    stage("  parse_html (links, text, meta robots)",
          lambda: [parse_html(r.body, r.job.url, cache, charset=charset(r.content_type))
                   for r in html], len(html))
    stage("    of which lexbor's parse (compiled)",
          lambda: lexbor(bodies), len(html))
    stage("    of which lexbor's parse and body text (compiled)",
          lambda: lexbor(bodies, text=True), len(html))
    stage("  count_terms", lambda: [count_terms(page.text) for page in parsed], len(html))
    stage("  WARC records (response + request)", lambda: write_warc(results), n)
    stage("    of which 2 SHA-1 of each body (compiled)",
          lambda: [hashlib.sha1(r.body).digest() + hashlib.sha1(r.body).digest()
                   for r in results], n)
    stage("    of which gzip, ISA-L level 1 (compiled)", lambda: records_gzip(results), n)
    size = sum(len(r.body) for r in results)
    print(f"{n:,} responses ({len(html):,} HTML pages parsed), {size / 1e6:.1f} MB of bodies, "
          f"best of {args.repeat}; CPU of this process (no fetching)\n")
    print("| stage | CPU-s | µs per page it runs on | µs per response |")
    print("| --- | ---: | ---: | ---: |")
    for name, seconds, per, per_response in rows:
        print(f"| {name.strip()} | {seconds:.2f} | {per:.0f} | {per_response:.0f} |"
              .replace("| of which", "| ... of which"))


if __name__ == "__main__":
    main()

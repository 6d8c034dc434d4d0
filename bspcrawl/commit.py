"""The commit pipeline: one page result, in schedule order, into the rank's index.

1. **restore**: a 304 or a page still fresh gets its archived body back, so it is indexed
   as if fetched again (``index/archive.py``);
2. **analyse**: a 3xx yields its resolved ``Location`` as a link (one more hop, same
   depth); an HTML answer is parsed and its terms counted (``analysis.py``), here or ahead
   in a worker; ``X-Robots-Tag`` and ``<meta name="robots">`` drop its links or terms; links
   past ``--crawl-max-outlinks`` or ``--crawl-max-page-hosts`` hosts are dropped (a link
   flood's cost stays bounded);
3. **archive**: WARC records, a history row and validators (``index/archive.py``);
4. **store**: the page row, its out-links and postings, with the next doc id
   (``index/store.py``).

Links carry their anchor text; the rank that owns their host credits it to the targets
(:meth:`Committer.credit`). robots.txt answers go to the frontier, never here.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future

import numpy as np
import xxhash

from bspcrawl.analysis import Analysis, LinkKeys, Pool, analyse
from bspcrawl.counters import Stats
from bspcrawl.index.archive import Archive
from bspcrawl.index.store import RankStore
from bspcrawl.index.terms import EMPTY, count_terms_each
from bspcrawl.messages import FETCHED, FetchResult, Link, clip_anchor
from bspcrawl.robots.links import LinkCache, ParsedPage
from bspcrawl.robots.robotstxt import header_directives
from bspcrawl.urls import host_hash, host_key, resolve


def is_html(result: FetchResult) -> bool:
    """True for a response that should be parsed as HTML (by Content-Type, else sniffed)."""
    ct = result.content_type.lower()
    if ct:
        return ct.startswith(("text/html", "application/xhtml"))
    return b"<html" in result.body[:1024].lower()


def _fetched_page(result: FetchResult) -> bool:
    """Whether *result* is an HTML page fetched (a revisit's body is restored only at its
    commit), to analyse ahead."""
    return (result.revisit == FETCHED and bool(result.body) and not result.location
            and 200 <= result.status < 300 and not result.job.robotstxt and is_html(result))


def charset(content_type: str) -> str | None:
    """The ``charset`` parameter of a Content-Type header, if any."""
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip(' "'):
            return value.strip(' "')
    return None


SENT_MEMO = 1 << 18  # links remembered as sent (about 100 bytes each)


class Committer:
    """Commits page results to one rank's archive and store (module docstring).

    ``agent_token`` is matched against ``X-Robots-Tag``; links past ``max_outlinks`` and
    to hosts past ``max_hosts`` distinct ones (0: no limit) are dropped and counted.
    """

    def __init__(self, archive: Archive, store: RankStore, agent_token: str,
                 keys: LinkKeys, max_outlinks: int = 0,
                 stats: Stats | None = None, max_hosts: int = 0,
                 pool: Pool | None = None) -> None:
        self.archive, self.store, self.agent_token = archive, store, agent_token
        self.keys, self.max_outlinks = keys, max_outlinks
        self.max_hosts, self.pool = max_hosts, pool
        self.stats = Stats() if stats is None else stats
        self.cache = LinkCache()
        self.sent: dict[int, int] = {}  # fingerprint -> least depth sent (_unsent)
        # id(result) -> (the result, the pool's task that analyses it, its place in the task)
        self.ahead: dict[int, tuple[FetchResult, Future[list[Analysis | None]], int]] = {}

    def prepare(self, results: list[FetchResult]) -> None:
        """Have the pool analyse now the pages of *results* that are HTML pages fetched: a
        task of consecutive pages for each worker, so that a burst keeps every worker busy."""
        if self.pool is None:
            return
        pages = [r for r in results if _fetched_page(r)]
        size = -(-len(pages) // self.pool.workers) if pages else 1
        for at in range(0, len(pages), size):
            chunk = pages[at:at + size]
            future = self.pool.submit([self._input(r) for r in chunk])
            if future is None:
                return
            for i, result in enumerate(chunk):
                self.ahead[id(result)] = (result, future, i)

    def discard(self, result: FetchResult) -> None:
        """*result* will not be committed: drop its analysis under way."""
        self.ahead.pop(id(result), None)

    def close(self) -> None:
        """End the worker processes, if any."""
        self.ahead.clear()
        if self.pool is not None:
            self.pool.close()

    def _indexed(self, result: FetchResult) -> tuple[bool, bool]:
        """Whether ``X-Robots-Tag`` lets the links be followed, and the terms be indexed."""
        header = header_directives(result.headers.get("x-robots-tag", ""), self.agent_token)
        return ("nofollow" not in header and "none" not in header,
                "noindex" not in header and "none" not in header)

    def _input(self, result: FetchResult) -> tuple[bytes, str, str | None, bool]:
        return (result.body, result.job.url, charset(result.content_type),
                self._indexed(result)[1])

    def _analysis(self, result: FetchResult) -> Analysis:
        def here() -> Analysis:
            return analyse(*self._input(result), self.cache, self.keys)

        ahead = self.ahead.pop(id(result), None)
        if ahead is None or self.pool is None:
            return here()
        return self.pool.result(ahead[1], ahead[2], here)

    def commit(self, result: FetchResult) -> list[Link]:
        """Commit one page result; returns the links it yields (a redirect's target, or
        the page's links unless nofollow, with their anchor text)."""
        job = result.job
        redirect, terms, page, parts = "", EMPTY, None, None
        found: Sequence[str] = []
        anchors: Sequence[str] = []
        pairs = fps = EMPTY.sequence
        fingerprint = 0
        links: list[Link] = []
        self.archive.restore(result, job.fp)
        if result.location:
            redirect = resolve(result.location, job.url) or ""
            if redirect:
                links.append(Link(redirect, job.depth, job.hops + 1))
        elif (200 <= result.status < 300 or result.revisit) and is_html(result):
            page, terms, parts, fingerprint, pairs, fps = self._analysis(result)
            if self._indexed(result)[0]:
                found, anchors = page.links, page.anchors
                if self.max_outlinks and len(found) > self.max_outlinks:
                    self.stats["commit/outlinks_cut"] += len(found) - self.max_outlinks
                    found, anchors = found[: self.max_outlinks], anchors[: self.max_outlinks]
                    fps = fps[: self.max_outlinks]
                if self.max_hosts and len(found) > self.max_hosts:  # else they cannot be
                    found, anchors, fps = self._few_hosts(found, anchors, fps)
            else:
                fps = EMPTY.sequence
        links += self._unsent(found, fps.tolist(), job.depth + 1, anchors)
        content_fp = xxhash.xxh3_64_intdigest(result.body) if result.body else 0
        self.archive.record(result, job.fp, host_hash(job.host), content_fp)
        title, parted = ("", None) if page is None or parts is None else (
            page.title, fields(page, parts))
        self.store.commit(result, job.fp, redirect, fps, terms, content_fp, fingerprint,
                          title, parted, pairs)
        return links

    def credit(self, links: list[Link]) -> None:
        """Credit the anchor text of links received to their targets, fetched yet or not."""
        anchored = [x for x in links if x.anchor]
        if anchored:
            fps = self.keys([x.url for x in anchored])
            which, hashes, tf = count_terms_each([x.anchor.encode() for x in anchored])
            self.store.search.add_anchors(fps[which], hashes, tf)

    def _unsent(self, urls: Sequence[str], keys: list[int], depth: int,
                anchors: Sequence[str]) -> list[Link]:
        """The page's links not sent yet at ``depth`` or less, with their anchor text.

        A link sent already is in its owner's seen set or refused again by the same rule;
        only a smaller depth could change its fate, so the crawl is the same with this memo
        or without, and most navigation links are not sent again.
        """
        sent = self.sent
        if len(sent) > SENT_MEMO:
            sent.clear()
        out = []
        for i, was in enumerate(map(sent.get, keys)):  # (lazy: sees the page's own keys)
            if was is None or was > depth:
                sent[keys[i]] = depth
                anchor = anchors[i]
                out.append(Link(urls[i], depth, 0, clip_anchor(anchor) if anchor else ""))
        self.stats["commit/links_known"] += len(keys) - len(out)
        return out

    def _few_hosts(self, found: Sequence[str], anchors: Sequence[str], keys: np.ndarray
                   ) -> tuple[list[str], list[str], np.ndarray]:
        """The links (anchors, keys) to the page's first ``max_hosts`` distinct hosts (a
        flood of subdomains would grow the host directory every rank holds)."""
        hosts: set[str] = set()
        kept = []
        for i, url in enumerate(found):
            key = host_key(url)
            if key in hosts or len(hosts) < self.max_hosts:
                hosts.add(key)
                kept.append(i)
        self.stats["commit/hosts_cut"] += len(found) - len(kept)
        return [found[i] for i in kept], [anchors[i] for i in kept], keys[kept]


def fields(page: ParsedPage, parts: tuple[np.ndarray, np.ndarray, np.ndarray]
           ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The (term hashes, counts) of a page's title and each heading level."""
    names = ["title", *page.headings]
    which, hashes, tf = parts
    bounds = np.searchsorted(which, np.arange(len(names) + 1)).tolist()
    return {name: (hashes[a:b], tf[a:b])
            for name, a, b in zip(names, bounds[:-1], bounds[1:], strict=True)}

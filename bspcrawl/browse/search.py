"""The search box: the crawl's BM25 ranking for words, plain matching for a URL or host.

A query of words goes to the crawl's index for ranking (:mod:`bspcrawl.search`, the
ranking of ``bspcrawl search``: BM25F over title, headings, body and anchor text, phrase
hits, PageRank once ``bspcrawl rank`` has run, duplicates folded), with a snippet for each
result. A query that looks like a URL or a host (one token holding ``.``, ``/`` or ``:``,
such as ``127.1.0.2`` or ``example.org/docs``), is matched plainly against the pages'
titles and URLs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from bspcrawl import search as ranking
from bspcrawl.browse.view import CrawlView, Page
from bspcrawl.index.cdxj import timestamp14

LIMIT = 50


@dataclass(frozen=True, slots=True)
class Found:
    """One result of the search box: the page (its newest capture) and a snippet."""

    page: Page
    snippet: str = ""


def looks_like_address(query: str) -> bool:
    """True for a query of one token holding ``.``, ``/`` or ``:`` (a URL, a host)."""
    words = query.split()
    return len(words) == 1 and any(c in words[0] for c in "./:")


def plain(view: CrawlView, query: str, limit: int = LIMIT) -> list[Found]:
    """Pages whose title or URL holds every word of ``query`` (case-insensitive), title
    matches first, at most ``limit``."""
    words = query.lower().split()
    if not words:
        return []
    in_title, in_url = [], []
    for page in view.catalogue():
        title, url = page.title.lower(), page.url.lower()
        if all(w in title for w in words):
            in_title.append(Found(page))
        elif all(w in title or w in url for w in words):
            in_url.append(Found(page))
    return (in_title + in_url)[:limit]


class SearchBox:
    """What ``/search`` answers for a crawl (module docstring). Thread-safe: the ranking's
    searcher is opened on the first query and shared under a lock."""

    def __init__(self, view: CrawlView, limit: int = LIMIT) -> None:
        self.view, self.limit = view, limit
        self._lock = threading.Lock()
        self._searcher: ranking.Searcher | None = None

    def search(self, query: str) -> list[Found]:
        """The results of ``query``, best first."""
        if not query.split():
            return []
        if looks_like_address(query):
            return plain(self.view, query, self.limit)
        with self._lock:
            if self._searcher is None:
                self._searcher = ranking.Searcher(ranking.open_shards(self.view.out))
            try:
                hits = ranking.search(self._searcher, self.view.out, query, self.limit)
            except ranking.SearchError:  # no word to search for (punctuation only)
                return plain(self.view, query, self.limit)
        return [Found(Page(r.url, r.title, timestamp14(r.fetch_time)), r.snippet)
                for r in hits]

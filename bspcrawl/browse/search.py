"""The search box: the crawl's ranking for words, plain matching for a URL or host.

A query of words is ranked as ``bspcrawl search`` ranks it (:mod:`bspcrawl.search`), with
a snippet per result; a single token holding ``.``, ``/`` or ``:`` (``example.org/docs``)
is matched plainly against the pages' titles and URLs.
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
    """What ``/search`` answers; the searcher is opened on the first query and shared under
    a lock."""

    def __init__(self, view: CrawlView, limit: int = LIMIT) -> None:
        self.view, self.limit = view, limit
        self._lock = threading.Lock()
        self._searcher: ranking.Searcher | None = None

    def search(self, query: str) -> list[Found]:
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

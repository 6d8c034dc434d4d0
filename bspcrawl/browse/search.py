"""The search box: plain title and URL matching, for now.

:func:`search` is the one function the app calls for a query; a ranked search (the BM25
index of ``bspcrawl search``) replaces its body without touching the app.
"""

from __future__ import annotations

from bspcrawl.browse.view import CrawlView, Page

LIMIT = 50


def search(view: CrawlView, query: str, limit: int = LIMIT) -> list[Page]:
    """Pages whose title or URL holds every word of ``query`` (case-insensitive), title
    matches first, at most ``limit``."""
    words = query.lower().split()
    if not words:
        return []
    in_title, in_url = [], []
    for page in view.catalogue():
        title, url = page.title.lower(), page.url.lower()
        if all(w in title for w in words):
            in_title.append(page)
        elif all(w in title or w in url for w in words):
            in_url.append(page)
    return (in_title + in_url)[:limit]

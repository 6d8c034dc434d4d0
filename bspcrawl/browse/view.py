"""What the app reads of a finished crawl, through the crawl's own readers.

Versions and the one nearest a moment come from :mod:`bspcrawl.index.inspect` (the HDF5
history), bodies from :func:`bspcrawl.index.warc.read_response`, the catalogue of pages
(for search) from ``/pages`` and the history, the stats from ``/stats`` and the summary. Only
files the crawl's own index names are ever opened: WARC files listed in ``/warc/files``,
under the crawl directory (and, after a recrawl, the previous crawls' ``warc/`` it refers
to).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from selectolax.lexbor import LexborHTMLParser

from bspcrawl.index import inspect
from bspcrawl.index.cdxj import bare_mime, timestamp14
from bspcrawl.index.history import History, Version
from bspcrawl.index.store import answered_ok
from bspcrawl.index.warc import read_response


@dataclass(frozen=True, slots=True)
class Capture:
    """One archived version of a URL: when (Unix s and 14 digits), status, where."""

    url: str
    time: float
    ts: str
    status: int
    version: Version
    path: Path | None  # the WARC file holding its body; None: no body kept


@dataclass(frozen=True, slots=True)
class Page:
    """A page of the catalogue: URL, title and the timestamp of its newest capture."""

    url: str
    title: str
    ts: str


@dataclass
class StatsData:
    """What the stats page shows, from a finished crawl or a running one."""

    facts: dict[str, object]
    times: list[float] = field(default_factory=list)  # seconds since the start
    pages: list[float] = field(default_factory=list)  # pages committed by then
    frontier: list[float] = field(default_factory=list)  # URLs waiting then
    errors: dict[str, int] = field(default_factory=dict)
    per_rank: list[int] = field(default_factory=list)


class CrawlView:
    """A finished crawl in ``out``, read for the app; OutputError if it is not one.
    Thread-safe (the server answers requests in threads)."""

    def __init__(self, out: Path) -> None:
        self.out = out.resolve()
        self.info = inspect.summary(self.out)
        self._lock = threading.Lock()
        self._catalogue: list[Page] | None = None

    def captures(self, url: str) -> list[Capture]:
        """Every version of ``url``, oldest first (empty: never fetched, or not a URL)."""
        try:
            found = inspect.versions(self.out, url)
        except inspect.OutputError:
            return []
        return [Capture(url, v.time, timestamp14(v.time), v.status, v, path)
                for v, path in found]

    @staticmethod
    def nearest(captures: list[Capture], ts: str, t: float) -> Capture | None:
        """The capture whose own 14-digit timestamp is ``ts``, else the one nearest ``t``
        (by time alone, a capture at 19.9 s would lose its own "...19" to one at 18.95 s)."""
        own = next((c for c in captures if c.ts == ts), None)
        if own is not None:
            return own
        pick = inspect.nearest([(c.version, c.path) for c in captures], t)
        return None if pick is None else next(c for c in captures if c.version is pick[0])

    @staticmethod
    def content(capture: Capture) -> tuple[dict[str, str], bytes]:
        """The stored header fields and body of a capture; OutputError if none is kept."""
        if capture.path is None:
            raise inspect.OutputError("no body was kept for that version")
        try:
            return read_response(capture.path, capture.version.warc_offset)
        except (OSError, ValueError) as e:
            raise inspect.OutputError(f"cannot read that version: {e}") from None

    def catalogue(self) -> list[Page]:
        """Every HTML page answered 2xx (or revalidated), with the title of its newest body
        (read once, on first use, from ``/pages``, the history and the WARC files)."""
        with self._lock:
            if self._catalogue is None:
                self._catalogue = self._read_catalogue()
            return self._catalogue

    def _read_catalogue(self) -> list[Page]:
        newest: dict[str, tuple[int, int, float]] = {}  # url -> (rank, url_fp, time)
        with inspect.open_crawl(self.out) as f:
            p = f["pages"]
            status, mime = p["status"][:], p["content_type"].asstr()[:]
            ok = answered_ok(status, p["revisit"][:])
            urls, rank, fp = p["url"].asstr()[:], p["rank"][:], p["url_fp"][:]
            fetched = p["fetch_time"][:]
            for i in np.flatnonzero(ok).tolist():
                if bare_mime(mime[i]).lower() == "text/html":
                    newest[urls[i]] = (int(rank[i]), int(fp[i]), float(fetched[i]))
            ranks = {}
            for r in {rank for rank, _, _ in newest.values()}:
                g = f[f"ranks/{r:04d}"]
                ranks[r] = (History.load(g["history"]), g["warc/files"].asstr()[:].tolist())
        pages = []
        for url, (r, fp, t) in sorted(newest.items()):
            history, files = ranks[r]
            v = history.original(fp)
            if v is None:
                continue
            try:
                _, body = read_response(self.out / files[v.warc_file], v.warc_offset)
            except (OSError, ValueError):
                continue
            pages.append(Page(url, title_of(body), timestamp14(t)))
        return pages

    def facts(self) -> dict[str, object]:
        """The summary's numbers worth a glance (``bspcrawl inspect`` has them all)."""
        return {k: self.info[k] for k in (
            "ranks", "supersteps", "pages_fetched", "pages_ok", "redirects", "urls_seen",
            "bytes", "not_modified", "fetches_saved", "bytes_saved", "wall_s",
            "pages_per_s", "stopped")}

    def stats(self) -> StatsData:
        """The summary and the per-superstep series of ``/stats`` (summed over ranks)."""
        info = self.info
        with inspect.open_crawl(self.out) as f:
            rows = f["stats"][:]
        steps = np.unique(rows["superstep"])
        at = np.searchsorted(steps, rows["superstep"])

        def per_step(column: str, how: str = "sum") -> list[float]:
            out = np.zeros(len(steps))
            (np.add if how == "sum" else np.maximum).at(out, at, rows[column])
            return out.tolist()

        return StatsData(self.facts(), per_step("time/elapsed", "max"), per_step("pages/committed"),
                         per_step("frontier/size"), info["errors"], info["pages_per_rank"])


def title_of(body: bytes) -> str:
    """The text of an HTML page's ``<title>`` ('' if none)."""
    node = LexborHTMLParser(body.decode("utf-8", "replace")).css_first("title")
    return " ".join(node.text().split()) if node else ""


def text_lines(body: bytes) -> list[str]:
    """The visible text of an HTML page, one stripped non-empty line per text block."""
    tree = LexborHTMLParser(body.decode("utf-8", "replace"))
    for node in tree.css("script, style"):
        node.decompose()
    root = tree.body or tree.root
    text = root.text(separator="\n") if root else ""
    return [s for s in (x.strip() for x in text.splitlines()) if s]

"""The message vocabulary every room of the crawler shares.

Marin et al. (2008) describe the crawl as messages between a rank's scheduler, its robots
(here: fetch workers) and the other ranks; these are those messages, as plain data:

- :class:`Link`: a discovered URL travelling to the rank that owns its host
  (``partition.py`` puts links on the wire between ranks);
- :class:`FetchJob`: job ``index`` of the fetch schedule ``seq``, from the scheduler to the
  fetch workers (``robots/fetcher.py``);
- :class:`FetchResult`: what the fetch workers bring back, delivered to the sequence window
  (``index/window.py``) and committed in schedule order (``commit.py``);
- the revisit codes of a result and of ``/pages/revisit``: :data:`FETCHED`,
  :data:`NOT_MODIFIED`, :data:`FRESH`.

This module imports nothing of bspcrawl, so that every other module can import it without
tying the rooms to each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FETCHED, NOT_MODIFIED, FRESH = 0, 1, 2  # FetchResult.revisit, /pages/revisit
ANCHOR_BYTES = 100
"""The most UTF-8 bytes of anchor text a link carries (:func:`clip_anchor`)."""


@dataclass(slots=True, frozen=True)
class Link:
    """A URL travelling to its owner: its depth from a seed, its redirect hops so far and
    the anchor text of the link (:func:`clip_anchor`; '' for none), which the owner
    credits to the target page (``docs/search.md``)."""

    url: str
    depth: int = 0
    hops: int = 0
    anchor: str = ""


def clip_anchor(text: str) -> str:
    """``text`` with its whitespace collapsed to single spaces, cut to at most
    :data:`ANCHOR_BYTES` UTF-8 bytes at a character boundary.

    >>> clip_anchor("  Read\\n the   manual ") + "|" + clip_anchor("é" * 60)[-2:]
    'Read the manual|éé'
    >>> len(clip_anchor("é" * 60).encode())
    100
    """
    text = " ".join(text.split())
    if len(text) * 4 <= ANCHOR_BYTES:  # (a character is at most 4 bytes)
        return text
    return text.encode()[:ANCHOR_BYTES].decode("utf-8", "ignore")


@dataclass(slots=True)
class FetchJob:
    """One URL to fetch: job ``index`` of schedule ``seq``.

    ``host`` is the host key (``host:port``) whose politeness the job obeys; ``delay`` the
    host's rest between two requests; ``robotstxt`` is True for a host's robots.txt (not a
    page); ``attempt`` counts the 429/503 answers this URL has had so far (politeness
    backs off by it); ``headers`` are the request header lines sent with it (conditional
    ones, set by the archive on a revisit).
    """

    seq: int
    index: int
    url: str
    host: str
    delay: float = 0.0
    robotstxt: bool = False
    depth: int = 0
    hops: int = 0
    headers: tuple[str, ...] = ()
    fp: int = 0  # the URL's seen-set fingerprint (0 for robots.txt)
    attempt: int = 0


@dataclass(slots=True)
class FetchResult:
    """What a fetch worker brings back. ``status`` is 0 and ``error`` names the kind on
    failure.

    ``revisit``: :data:`FETCHED` for a transfer; :data:`NOT_MODIFIED` for a 304 and
    :data:`FRESH` for a URL not fetched because its archived copy was still fresh, whose
    ``body`` and ``content_type`` were restored from the archive (``index/archive.py``).
    """

    job: FetchJob
    status: int = 0
    error: str = ""
    content_type: str = ""
    location: str = ""
    body: bytes = b""
    started: float = 0.0  # Unix time the transfer started
    elapsed: float = 0.0
    ended: float = 0.0  # time.monotonic() when it ended (for the host's rest)
    retry_after: float | None = None  # seconds, from a 429/503's Retry-After
    headers: dict[str, str] = field(default_factory=dict)
    revisit: int = FETCHED
    truncated: bool = False  # the body is the first ``fetch_max_bytes`` of a longer one

"""The message vocabulary every room of the crawler shares.

Marin et al. (2008) describe the crawl as messages between a rank's scheduler, its robots
(here: fetch workers) and the other ranks; these are those messages, as plain data:
:class:`Link` (a URL travelling to the rank that owns its host), :class:`FetchJob` (from the
scheduler to the fetch workers), :class:`FetchResult` (back to the sequence window, committed
in schedule order) and the revisit codes :data:`FETCHED`, :data:`NOT_MODIFIED`, :data:`FRESH`.
It imports nothing of bspcrawl, so every module can import it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FETCHED, NOT_MODIFIED, FRESH = 0, 1, 2  # FetchResult.revisit, /pages/revisit
ANCHOR_BYTES = 100
"""The most UTF-8 bytes of anchor text a link carries (:func:`clip_anchor`)."""


@dataclass(slots=True, frozen=True)
class Link:
    """A URL travelling to its owner, with its depth, redirect hops and anchor text."""

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
    """One URL to fetch: job ``index`` of schedule ``seq``, under the politeness of
    ``host``; ``attempt`` counts its 429/503 answers so far, ``headers`` are conditional
    request lines on a revisit."""

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
    """What a fetch worker brings back (``status`` 0 and ``error`` set on failure).
    ``revisit`` is :data:`FRESH` when the archived copy was still fresh and its body was
    restored from the archive instead of fetched."""

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

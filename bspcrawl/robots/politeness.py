"""How long a host rests after an answer: the one rule of politeness.

After a fetch of one of its URLs a host rests

    ``max(delay, k x the response time)``, and after a 429 or 503 (for a robots.txt also
    after any 5xx or no answer, RFC 9309 2.3.1.3-4) at least its ``Retry-After`` (seconds
    or an HTTP date) or, without one, an exponential backoff ``5 s x 2^attempt`` for the
    URL's ``attempt``-th such answer (0, 1, ...),

with ``delay = max(--min-host-delay, the robots.txt Crawl-delay)`` (Crawl-delay capped by
``politeness_max_crawl_delay``), ``k = politeness_response_factor`` (like Heritrix's
``delayFactor`` and Scrapy's AutoThrottle), and the 429/503 rest capped by
``politeness_max_backoff``. A result that fetched nothing (a page still fresh in the
archive) costs the host no rest. :meth:`Politeness.rest` is that rule; the fetch workers
(``robots/fetcher.py``) apply it before a host's next transfer, and the frontier applies
the same rule before it schedules a paced host again, so both agree on every host's rest.

A host is *paced* when a wall-clock rule applies to it (a delay or factor above zero): the
frontier then gives it one job at a time. An unpaced host (``--min-host-delay 0
--response-factor 0``, no Crawl-delay) is scheduled by superstep count alone, which is what
makes crawls of a fast local web reproducible; it still rests after a 429 or 503.
"""

from __future__ import annotations

import email.utils
import time

from bspcrawl.messages import FRESH, FetchResult
from bspcrawl.settings import Settings

BACKOFF_BASE = 5.0  # seconds of rest after the first 429/503 without Retry-After
RETRY_STATUSES = frozenset((429, 503))
# robots.txt failures that are final, not "unreachable": more than five redirects is
# "unavailable" (RFC 9309 2.3.1.2); an address the guard refuses will be refused again
ROBOTS_FINAL_ERRORS = frozenset(("redirects", "blocked_address"))
RETRY_AFTER_MAX = 10 ** 9  # seconds: a larger delta (any number of digits) counts as this


def retry_after(value: str, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header value (delta-seconds or HTTP-date), or
    None for a value that is neither. ASCII digits only ("²" is no delay), and any size of
    number or year is bounded, never an exception: a header is the server's, not ours."""
    value = value.strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():
        digits = value.lstrip("0") or "0"  # int() of 5,000 digits raises: cap by length
        return float(RETRY_AFTER_MAX if len(digits) > 9 else int(digits))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # an HTTP-date is GMT; a malformed one may lack the zone
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff(attempt: int, hint: float | None, cap: float) -> float:
    """Rest after the ``attempt``-th (1, 2, ...) 429/503: the server's hint, else 5 s x 2^n."""
    rest = hint if hint is not None else BACKOFF_BASE * 2 ** (attempt - 1)
    return min(rest, cap)


def unreachable(result: FetchResult) -> bool:
    """Is a robots.txt answer "unreachable" (RFC 9309 2.3.1.3-4: a 5xx or no answer, to be
    retried), rather than an answer (2xx, or 4xx, more than five redirects or a refused
    address: "unavailable")? A 429 is unreachable too, as Google treats it: a server that
    asks to be left alone is not taken to allow everything at once."""
    if result.status == 429:
        return True
    return not (200 <= result.status < 500 or result.error in ROBOTS_FINAL_ERRORS)


def backs_off(result: FetchResult) -> bool:
    """Does the answer call for a backoff? A 429 or 503; for a robots.txt also an
    :func:`unreachable` one."""
    if result.status in RETRY_STATUSES:
        return True
    return result.job.robotstxt and unreachable(result)


class Politeness:
    """The rest rule of the module docstring, with a crawl's settings.

    ``min_delay``, ``max_crawl_delay``, ``factor`` and ``max_backoff`` are the settings
    ``politeness_min_host_delay``, ``politeness_max_crawl_delay``,
    ``politeness_response_factor`` and ``politeness_max_backoff``.
    """

    def __init__(self, min_delay: float, max_crawl_delay: float, factor: float,
                 max_backoff: float) -> None:
        self.min_delay, self.max_crawl_delay = min_delay, max_crawl_delay
        self.factor, self.max_backoff = factor, max_backoff

    @classmethod
    def from_settings(cls, s: Settings) -> Politeness:
        """The rule of a crawl's settings."""
        return cls(s.politeness_min_host_delay, s.politeness_max_crawl_delay,
                   s.politeness_response_factor, s.politeness_max_backoff)

    @property
    def paced(self) -> bool:
        """True when a wall-clock rule applies to every host."""
        return self.min_delay > 0 or self.factor > 0

    def delay(self, crawl_delay: float | None) -> float:
        """A host's delay between requests, given its robots.txt Crawl-delay (or None)."""
        return max(self.min_delay, min(crawl_delay or 0.0, self.max_crawl_delay))

    def rest(self, result: FetchResult) -> float:
        """Seconds the host of ``result`` rests after it, counted from ``result.ended``."""
        if result.revisit == FRESH:
            return 0.0
        pause = max(result.job.delay, self.factor * result.elapsed)
        if backs_off(result):
            pause = max(pause, backoff(result.job.attempt + 1, result.retry_after,
                                       self.max_backoff))
        return pause

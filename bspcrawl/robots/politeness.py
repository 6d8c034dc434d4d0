"""How long a host rests after an answer: the one rule of politeness.

After a fetch a host rests ``max(delay, k x the response time)``, and after a 429 or 503
(for a robots.txt also a 5xx or no answer, RFC 9309 2.3.1.3-4) at least its Retry-After
or else ``5 s x 2^attempt``, capped by ``politeness_max_backoff``; ``delay`` is the larger
of ``--min-host-delay`` and the robots.txt Crawl-delay (capped), ``k`` the
``politeness_response_factor`` (like Heritrix's delayFactor). A page still fresh in the
archive costs no rest. The fetch workers and the frontier both apply :meth:`Politeness.rest`,
so they agree. A host is *paced* when a delay or factor is above zero (one job at a time);
an unpaced host is scheduled by superstep count alone, which keeps local crawls
reproducible, and still rests after a 429 or 503.
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
    """Seconds to wait from a Retry-After value (delta-seconds or HTTP-date), or None;
    bounded and never raising, since the header is the server's."""
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
    """Is a robots.txt answer "unreachable" (RFC 9309 2.3.1.3-4: 5xx or none, retried)
    rather than "unavailable"? A 429 is unreachable too, as Google treats it."""
    if result.status == 429:
        return True
    return not (200 <= result.status < 500 or result.error in ROBOTS_FINAL_ERRORS)


def backs_off(result: FetchResult) -> bool:
    """A 429 or 503, or an :func:`unreachable` robots.txt answer."""
    if result.status in RETRY_STATUSES:
        return True
    return result.job.robotstxt and unreachable(result)


class Politeness:
    """The rest rule of the module docstring, with the crawl's ``politeness_*`` settings."""

    def __init__(self, min_delay: float, max_crawl_delay: float, factor: float,
                 max_backoff: float) -> None:
        self.min_delay, self.max_crawl_delay = min_delay, max_crawl_delay
        self.factor, self.max_backoff = factor, max_backoff

    @classmethod
    def from_settings(cls, s: Settings) -> Politeness:
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
